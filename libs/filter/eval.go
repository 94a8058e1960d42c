package filter

import (
	"bytes"
	"strings"
	"sync"
)

// Result is the outcome of evaluating an expression against one message. Only True matches.
type Result uint8

const (
	// False: the expression is FALSE.
	False Result = iota
	// True: the expression is TRUE; the message matches.
	True
	// Unknown: the expression is NULL (SQL's unknown), typically because a property it needs
	// is missing. RocketMQ does not deliver the message.
	Unknown
	// Error: evaluation stopped where RocketMQ's evaluator throws (a property that does not
	// parse as the number it is compared with, a TRUE/FALSE literal compared with a property
	// from the left). RocketMQ logs it and does not deliver the message.
	Error
)

var resultNames = [...]string{False: "FALSE", True: "TRUE", Unknown: "NULL", Error: "ERROR"}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "Result(?)"
}

// Properties gives a message's properties by name. Property returns ok false for a missing
// property. The value must stay valid while the evaluation runs.
type Properties interface {
	Property(name string) (value string, ok bool)
}

// Match reports whether the message with properties p matches: Eval(p) == True.
func (e *Expr) Match(p Properties) bool { return e.Eval(p) == True }

// MatchMap reports whether the message with properties m matches. It does not allocate.
func (e *Expr) MatchMap(m map[string]string) bool { return e.EvalMap(m) == True }

// MatchRaw reports whether a message matches, given its properties as stored in the commit
// log (name 0x01 value 0x02, repeated; see EvalRaw). It does not allocate for expressions
// reading up to 16 distinct properties.
func (e *Expr) MatchRaw(props []byte) bool { return e.EvalRaw(props) == True }

// Eval evaluates the expression against properties p. Each property the expression reads is
// asked for once.
func (e *Expr) Eval(p Properties) Result {
	var inline [inlineSlots]slot
	slots, pooled := e.slots(&inline)
	if p != nil {
		for k, name := range e.names {
			v, ok := p.Property(name)
			slots[k] = slot{v: v, ok: ok}
		}
	}
	return e.evalSlots(slots, pooled)
}

// EvalMap evaluates the expression against properties m (a nil map has no properties). Every
// entry counts, an empty value included; properties decoded from a stored message never have
// empty values (RocketMQ drops them), see EvalRaw.
func (e *Expr) EvalMap(m map[string]string) Result {
	env := env{src: srcMap, m: m}
	return e.result(&env)
}

// EvalRaw evaluates the expression against a message's properties section as the commit log
// stores it: pairs "name 0x01 value" separated by 0x02, decoded as RocketMQ's
// MessageDecoder.string2messageProperties does. A pair's name ends at its first 0x01 (the value
// may hold more); pairs with an empty name or value, or without 0x01, are skipped; when a name
// repeats, the last pair wins. Values are compared byte for byte (RocketMQ decodes UTF-8
// first; the two agree on valid UTF-8). props is read, never kept or modified.
func (e *Expr) EvalRaw(props []byte) Result {
	var inline [inlineSlots]slot
	slots, pooled := e.slots(&inline)
	e.scanRaw(props, slots)
	return e.evalSlots(slots, pooled)
}

// slots returns one empty slot per property name: inline when there are few, else a pooled
// buffer (returned as pooled, for evalSlots to give back).
func (e *Expr) slots(inline *[inlineSlots]slot) (slots []slot, pooled *[]slot) {
	n := len(e.names)
	if n <= inlineSlots {
		return inline[:n], nil
	}
	pooled = slotPool.Get().(*[]slot)
	if cap(*pooled) < n {
		*pooled = make([]slot, n)
	}
	slots = (*pooled)[:n]
	clear(slots)
	return slots, pooled
}

func (e *Expr) evalSlots(slots []slot, pooled *[]slot) Result {
	env := env{src: srcSlots, slots: slots}
	r := e.result(&env)
	if pooled != nil {
		clear(slots) // drop references to the message's values
		slotPool.Put(pooled)
	}
	return r
}

// inlineSlots is how many distinct properties EvalRaw resolves without allocating.
const inlineSlots = 16

var slotPool = sync.Pool{New: func() any { return new([]slot) }}

type slot struct {
	v  string
	ok bool
}

const (
	propNameSep = 0x01
	propPairSep = 0x02
)

// scanRaw resolves every property the expression reads in one pass over props.
func (e *Expr) scanRaw(props []byte, slots []slot) {
	for len(props) > 0 {
		var pair []byte
		if i := bytes.IndexByte(props, propPairSep); i >= 0 {
			pair, props = props[:i], props[i+1:]
		} else {
			pair, props = props, nil
		}
		j := bytes.IndexByte(pair, propNameSep)
		if j <= 0 || j == len(pair)-1 {
			continue
		}
		k := e.slotIndex(pair[:j])
		if k >= 0 {
			slots[k] = slot{v: bytesString(pair[j+1:]), ok: true}
		}
	}
}

func (e *Expr) slotIndex(name []byte) int32 {
	if e.slotOf != nil {
		if k, ok := e.slotOf[string(name)]; ok {
			return k
		}
		return -1
	}
	for k, n := range e.names {
		if len(n) == len(name) && n == string(name) {
			return int32(k)
		}
	}
	return -1
}

type source uint8

const (
	srcMap   source = iota // look each property up in m
	srcSlots               // properties resolved before evaluation, one slot per name
)

// env is where one evaluation reads properties.
type env struct {
	src   source
	m     map[string]string
	slots []slot
}

func (e *Expr) result(env *env) Result {
	v := e.eval(env, e.root)
	switch {
	case v.k == kErr:
		return Error
	case v.k == kBool && v.n != 0:
		return True
	case v.k == kBool:
		return False
	}
	return Unknown
}

// eval evaluates node i exactly as RocketMQ's expression object for it does: the same operand
// order, the same short-circuits, the same points where Java would throw (kErr, which aborts
// the whole evaluation as the exception does). Recursion depth is the tree height, at most
// MaxDepth.
func (e *Expr) eval(env *env, i int32) value {
	n := &e.nodes[i]
	switch n.op {
	case opConst:
		return n.val
	case opProp:
		return e.lookup(env, n.slot)
	case opCast:
		v := e.eval(env, n.a)
		if v.k == kNull || v.k == kErr || v.k == kBool {
			return v
		}
		return vFalse
	case opNot:
		v := e.eval(env, n.a)
		switch v.k {
		case kBool:
			return vBool(v.n == 0)
		case kNull, kErr:
			return v
		}
		return vErr // (Boolean) cast of a non-Boolean; the parser never builds this
	case opNeg:
		v := e.eval(env, n.a)
		switch v.k {
		case kInt:
			v.n = int64(-int32(v.n))
		case kLong:
			v.n = -v.n
		case kDouble:
			v.f = -v.f
		case kErr:
		default:
			return vNull
		}
		return v
	case opAnd, opOr:
		stop := vBool(n.op == opOr) // FALSE ends an AND, TRUE ends an OR
		sawNull := false
		for _, k := range n.kids {
			v := e.eval(env, k)
			switch v.k {
			case kBool:
				if v.n == stop.n {
					return stop
				}
			case kNull:
				sawNull = true
			default:
				return vErr
			}
		}
		if sawNull {
			return vNull
		}
		return vBool(n.op == opAnd)
	case opEq, opNe:
		v := e.equal(env, n.a, n.b)
		if n.op == opNe && v.k == kBool {
			return vBool(v.n == 0)
		}
		return v
	case opIsNull, opIsNotNull:
		v := e.eval(env, n.a)
		if v.k == kErr {
			return v
		}
		return vBool((v.k == kNull) == (n.op == opIsNull))
	case opGt, opGe, opLt, opLe:
		return e.relational(env, n.op, n.a, n.b)
	case opBetween, opNotBetween:
		// a >= b AND a <= c, or a < b OR a > c, as RocketMQ expands them.
		first, second, stop := opGe, opLe, vFalse
		if n.op == opNotBetween {
			first, second, stop = opLt, opGt, vTrue
		}
		l := e.relational(env, first, n.a, n.b)
		if l.k == kErr || l == stop {
			return l
		}
		r := e.relational(env, second, n.a, n.c)
		if r.k == kErr || r == stop {
			return r
		}
		if l.k == kNull || r.k == kNull {
			return vNull
		}
		return vBool(n.op == opBetween)
	case opIn:
		v := e.eval(env, n.a)
		if v.k != kString {
			if v.k == kErr {
				return v
			}
			return vNull // null, or not a String
		}
		return vBool(n.contains(v.s) != n.neg)
	case opContains, opStartsWith, opEndsWith:
		if n.lit == "" {
			return vFalse // RocketMQ answers FALSE for an empty search string, NOT form too
		}
		v := e.eval(env, n.a)
		if v.k != kString {
			if v.k == kErr {
				return v
			}
			return vFalse // a missing property or a non-string: FALSE, NOT form too
		}
		var hit bool
		switch n.op {
		case opContains:
			hit = strings.Contains(v.s, n.lit)
		case opStartsWith:
			hit = strings.HasPrefix(v.s, n.lit)
		default:
			hit = strings.HasSuffix(v.s, n.lit)
		}
		return vBool(hit != n.neg)
	}
	return vErr
}

func (n *node) contains(s string) bool {
	if n.set != nil {
		_, ok := n.set[s]
		return ok
	}
	for _, x := range n.list {
		if x == s {
			return true
		}
	}
	return false
}

func (e *Expr) lookup(env *env, slot int32) value {
	var s string
	var ok bool
	switch env.src {
	case srcMap:
		s, ok = env.m[e.names[slot]]
	case srcSlots:
		sl := env.slots[slot]
		s, ok = sl.v, sl.ok
	}
	if !ok {
		return vNull
	}
	return value{k: kString, s: s}
}

// equal is RocketMQ's equality: both operands are evaluated; null = null is TRUE, a null left
// operand facing a value is NULL, a value facing a null right operand is FALSE; otherwise the
// two compare (with conversions, see compare) equal or not.
func (e *Expr) equal(env *env, a, b int32) value {
	l := e.eval(env, a)
	if l.k == kErr {
		return l
	}
	r := e.eval(env, b)
	if r.k == kErr {
		return r
	}
	switch {
	case l.k == kNull && r.k == kNull:
		return vTrue
	case l.k == kNull:
		return vNull
	case r.k == kNull:
		return vFalse
	}
	c, ok := compare(l, r)
	if !ok {
		return vErr
	}
	return vBool(c == 0)
}

// relational is RocketMQ's >, >=, < and <=: NULL when the left operand is null (the right one
// is then not evaluated) or the right one is; two strings (two properties) are both parsed
// with Double.valueOf, an error if either fails; otherwise compare decides.
func (e *Expr) relational(env *env, o op, a, b int32) value {
	l := e.eval(env, a)
	if l.k == kNull || l.k == kErr {
		return l
	}
	r := e.eval(env, b)
	if r.k == kNull || r.k == kErr {
		return r
	}
	var c int
	if l.k == kString && r.k == kString {
		lf, ok1 := parseJavaDouble(l.s)
		rf, ok2 := parseJavaDouble(r.s)
		if !ok1 || !ok2 {
			return vErr
		}
		c = javaDoubleCompare(lf, rf)
	} else {
		var ok bool
		if c, ok = compare(l, r); !ok {
			return vErr
		}
	}
	switch o {
	case opGt:
		return vBool(c > 0)
	case opGe:
		return vBool(c >= 0)
	case opLt:
		return vBool(c < 0)
	}
	return vBool(c <= 0)
}
