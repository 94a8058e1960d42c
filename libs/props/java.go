package props

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// RocketMQ hands its configuration files to MixAll.properties2Object: every setter of the
// configuration classes with one int, long, double, float, boolean or String parameter is a
// key (setFooBar → fooBar), and a key that matches none is ignored. A file written for a
// RocketMQ server therefore carries keys that have no field in this program's Config; a
// JavaKeys table lists them (from RocketMQ's sources) with the type their setter parses, so
// that they are accepted and reported (Options.Foreign, Options.Ignored) while a value
// RocketMQ itself could not parse is still refused (Check).

// ErrJavaValue is returned by JavaKeys.Check for a value RocketMQ's own parsing refuses.
var ErrJavaValue = errors.New("props: value RocketMQ cannot parse")

// JavaType is the parameter type of a RocketMQ setter.
type JavaType int

// The setter parameter types MixAll.properties2Object converts to.
const (
	JavaString JavaType = iota
	JavaInt
	JavaLong
	JavaDouble
	JavaBool
)

// JavaKeys maps the keys of RocketMQ configuration classes to their setter's type.
type JavaKeys map[string]JavaType

// Foreign returns the keys as a set, for Options.Foreign.
func (k JavaKeys) Foreign() map[string]bool {
	out := make(map[string]bool, len(k))
	for key := range k {
		out[key] = true
	}
	return out
}

// Check refuses a value of key that RocketMQ's parsing refuses (Integer.parseInt,
// Long.parseLong, Double.parseDouble; booleans and strings take anything). Keys not in the
// table are not checked.
func (k JavaKeys) Check(key, value string) error {
	kind, ok := k[key]
	if !ok {
		return nil
	}
	var err error
	v := strings.TrimSpace(value)
	switch kind {
	case JavaInt:
		_, err = strconv.ParseInt(v, 10, 32)
	case JavaLong:
		_, err = strconv.ParseInt(v, 10, 64)
	case JavaDouble:
		_, err = strconv.ParseFloat(v, 64)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %q is not a number RocketMQ parses (%v)", ErrJavaValue, key, value, err)
	}
	return nil
}
