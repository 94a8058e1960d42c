package props

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// ErrHelp is returned by Load when -h or -help was given; usage was printed.
var ErrHelp = flag.ErrHelp

// EnvPrefix prefixes every environment variable that sets a key.
const EnvPrefix = "RMQ_"

// EnvName returns the environment variable that sets key:
// listenPort -> RMQ_LISTEN_PORT, haMasterAddress -> RMQ_HA_MASTER_ADDRESS. Dots and dashes of
// RocketMQ's dotted keys become underscores, since a shell variable name cannot hold them:
// tls.server.mode -> RMQ_TLS_SERVER_MODE, tls.server.certPath -> RMQ_TLS_SERVER_CERT_PATH.
func EnvName(key string) string {
	var b strings.Builder
	b.WriteString(EnvPrefix)
	rs := []rune(key)
	sep := func() {
		if s := b.String(); !strings.HasSuffix(s, "_") {
			b.WriteByte('_')
		}
	}
	for i, r := range rs {
		if r == '.' || r == '-' {
			sep()
			continue
		}
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
			(i+1 < len(rs) && unicode.IsLower(rs[i+1]))) {
			sep()
		}
		if unicode.IsDigit(r) && i > 0 && !unicode.IsDigit(rs[i-1]) {
			sep()
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

type field struct {
	key string
	ms  bool
	v   reflect.Value
}

func fields(dst any) (map[string]field, []string, error) {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return nil, nil, errors.New("props: destination must be a pointer to a struct")
	}
	out := map[string]field{}
	var keys []string
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("prop")
			if tag == "" {
				if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
					walk(v.Field(i))
				}
				continue
			}
			if tag == "-" {
				continue
			}
			name, opt, _ := strings.Cut(tag, ",")
			out[name] = field{key: name, ms: opt == "ms", v: v.Field(i)}
			keys = append(keys, name)
		}
	}
	walk(rv.Elem())
	sort.Strings(keys)
	return out, keys, nil
}

// Keys lists the keys dst accepts, sorted.
func Keys(dst any) []string {
	_, keys, _ := fields(dst)
	return keys
}

// Set assigns one value to the field bound to key.
func Set(dst any, key, value, source string) error {
	fs, _, err := fields(dst)
	if err != nil {
		return err
	}
	return set(fs, key, value, source)
}

func set(fs map[string]field, key, value, source string) error {
	f, ok := fs[key]
	if !ok {
		return fmt.Errorf("props: unknown key %q (%s)", key, source)
	}
	if err := assign(f, value); err != nil {
		return fmt.Errorf("props: bad value %q for key %q (%s): %v", value, key, source, err)
	}
	return nil
}

func assign(f field, s string) error {
	v := f.v
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if f.ms {
				v.SetInt(int64(time.Duration(n) * time.Millisecond))
			} else {
				v.SetInt(int64(time.Duration(n) * time.Second))
			}
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Int16:
		n, err := strconv.ParseInt(s, 10, v.Type().Bits())
		if err != nil {
			return err
		}
		v.SetInt(n)
	case reflect.Float64:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		v.SetFloat(n)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported field type %s", v.Type())
		}
		var parts []string
		for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts))
	default:
		return fmt.Errorf("unsupported field type %s", v.Type())
	}
	return nil
}

// Options tune LoadOptions.
type Options struct {
	// Foreign are keys the program's RocketMQ counterpart reads that have no field here (a
	// RocketMQ broker.conf carries them): set in the properties file they are accepted and
	// handed to Ignored instead of refused. Keys bound to a field are never foreign.
	Foreign map[string]bool
	// Ignored receives every foreign key the file set, with its value and where it came from
	// ("broker.conf:12"). Nil drops them.
	Ignored func(key, value, source string)
}

// Load fills dst (a pointer to a struct already holding defaults) from, in
// increasing precedence: the properties file named by -c, environment
// variables (RMQ_*), and per-key flags. args excludes the program name.
// Usage goes to out when -h is given (ErrHelp is returned then).
func Load(dst any, program string, args []string, environ []string, out io.Writer) (configFile string, err error) {
	return LoadOptions(dst, program, args, environ, out, Options{})
}

// LoadOptions is Load with o: foreign keys in the file are reported, not refused.
func LoadOptions(dst any, program string, args []string, environ []string, out io.Writer, o Options) (configFile string, err error) {
	fs, keys, err := fields(dst)
	if err != nil {
		return "", err
	}
	flags := flag.NewFlagSet(program, flag.ContinueOnError)
	flags.SetOutput(out)
	flags.StringVar(&configFile, "c", "", "properties file with RocketMQ key names")
	flagVals := map[string]*string{}
	for _, k := range keys {
		def := fmt.Sprint(fs[k].v.Interface())
		flagVals[k] = flags.String(k, "", fmt.Sprintf("%s (env %s, default %s)", k, EnvName(k), def))
	}
	if err := flags.Parse(args); err != nil {
		return "", err
	}
	if flags.NArg() > 0 {
		return "", fmt.Errorf("props: unexpected argument %q", flags.Arg(0))
	}
	if configFile != "" {
		entries, err := ParseFile(configFile)
		if err != nil {
			return configFile, err
		}
		for _, e := range entries {
			if _, bound := fs[e.Key]; !bound && o.Foreign[e.Key] {
				if o.Ignored != nil {
					o.Ignored(e.Key, e.Value, e.Source)
				}
				continue
			}
			if err := set(fs, e.Key, e.Value, e.Source); err != nil {
				return configFile, err
			}
		}
	}
	envIndex := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			envIndex[k] = v
		}
	}
	for _, k := range keys {
		name := EnvName(k)
		if v, ok := envIndex[name]; ok {
			if err := set(fs, k, v, "env "+name); err != nil {
				return configFile, err
			}
		}
	}
	var setErr error
	flags.Visit(func(fl *flag.Flag) {
		if setErr != nil || fl.Name == "c" {
			return
		}
		setErr = set(fs, fl.Name, *flagVals[fl.Name], "flag -"+fl.Name)
	})
	return configFile, setErr
}

// LoadOS is Load with the process's arguments and environment.
func LoadOS(dst any) (string, error) {
	return Load(dst, os.Args[0], os.Args[1:], os.Environ(), os.Stderr)
}

// durationText writes d as the key reads a bare number (RocketMQ's integer milliseconds for an
// ",ms" key, seconds otherwise), so that a dump reads back unchanged; a duration that is not a
// whole number of that unit keeps Go's form ("1.5s"), which the key accepts too.
func durationText(d time.Duration, ms bool) string {
	unit := time.Second
	if ms {
		unit = time.Millisecond
	}
	if d%unit == 0 {
		return strconv.FormatInt(int64(d/unit), 10)
	}
	return d.String()
}

// Dump renders dst as a properties file (sorted keys), masking keys whose
// name contains "secret", "password" or "token", except keys ending in
// "File" or "Path", which name where a secret is kept (haSecretFile), not
// the secret. Durations are written in their key's unit (durationText). Used for the start-up
// line that states the effective configuration, GET_NAMESRV_CONFIG and GET_BROKER_CONFIG.
func Dump(dst any) map[string]string {
	fs, keys, _ := fields(dst)
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		val := fs[k].v.Interface()
		s := fmt.Sprint(val)
		if sl, ok := val.([]string); ok {
			s = strings.Join(sl, ",")
		}
		if d, ok := val.(time.Duration); ok {
			s = durationText(d, fs[k].ms)
		}
		lk := strings.ToLower(k)
		location := strings.HasSuffix(lk, "file") || strings.HasSuffix(lk, "path")
		if s != "" && !location && (strings.Contains(lk, "secret") || strings.Contains(lk, "password") || strings.Contains(lk, "token")) {
			s = "****"
		}
		out[k] = s
	}
	return out
}
