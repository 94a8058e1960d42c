package filter

import (
	"errors"
	"strings"
	"testing"
)

func seedSelectors() []string {
	var s []string
	for _, cs := range [][]evalCase{missingPropertyCases, conversionCases, operatorCases, rocketMQTestCases} {
		for _, c := range cs {
			s = append(s, c.sel)
		}
	}
	for _, c := range parseErrorCases {
		s = append(s, c.sel)
	}
	for _, c := range acceptedCases {
		s = append(s, c.sel)
	}
	return s
}

// decodeProps is the reference decoding of a stored properties section (RocketMQ's
// string2messageProperties) into a map, written plainly.
func decodeProps(b []byte) map[string]string {
	m := map[string]string{}
	for _, pair := range strings.Split(string(b), "\x02") {
		k, v, ok := strings.Cut(pair, "\x01")
		if ok && k != "" && v != "" {
			m[k] = v
		}
	}
	return m
}

var fuzzProps = []P{
	nil,
	{"a": "5", "b": "x", "TAGS": "TagA"},
	{"a": "10", "b": "10.0", "c": "abc", "value": "axb"},
	{"a": "NaN", "b": "true", "c": "-0.0"},
	{"a": "x", "b": "", "c": "2147483648"},
}

// FuzzParse: Parse never panics and either fails with a ParseError inside the input or yields
// an expression whose canonical form parses back to itself and evaluates the same.
func FuzzParse(f *testing.F) {
	for _, s := range seedSelectors() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sel string) {
		e, err := Parse(sel)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrParse) {
				t.Fatalf("Parse(%q): error %v is not a ParseError wrapping ErrParse", sel, err)
			}
			if pe.Offset < 0 || pe.Offset > len(sel) || pe.Line < 1 || pe.Column < 1 {
				t.Fatalf("Parse(%q): position %+v outside the input", sel, pe)
			}
			return
		}
		canon := e.String()
		e2, err := Parse(canon)
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not parse: %v", sel, canon, err)
		}
		if e2.String() != canon || e2.Trailing() != "" {
			t.Fatalf("canonical form of %q is not a fixed point: %q -> %q (trailing %q)", sel, canon, e2.String(), e2.Trailing())
		}
		if e.Source() != sel {
			t.Fatalf("Source() = %q, want %q", e.Source(), sel)
		}
		for _, p := range fuzzProps {
			if r1, r2 := e.EvalMap(p), e2.EvalMap(p); r1 != r2 {
				t.Fatalf("%q over %v: %v, canonical %q: %v", sel, p, r1, canon, r2)
			}
		}
	})
}

// FuzzEval: evaluation never panics, and a message's stored properties section, the same
// properties as a map and through the Properties interface all give the same result.
func FuzzEval(f *testing.F) {
	for i, s := range seedSelectors() {
		f.Add(s, rawProps(fuzzProps[i%len(fuzzProps)]))
	}
	f.Add("a = 'x'", []byte("a\x01y\x02a\x01x\x02"))      // the last duplicate wins
	f.Add("a = 'x\x01y'", []byte("a\x01x\x01y\x02"))      // a value may hold 0x01
	f.Add("a IS NULL", []byte("a\x01\x02\x01v\x02a"))     // empty value, empty name, no 0x01
	f.Add("a > b", []byte("a\x01\xff\xfe\x02b\x015\x02")) // invalid UTF-8
	f.Fuzz(func(t *testing.T, sel string, props []byte) {
		e, err := Parse(sel)
		if err != nil {
			return
		}
		m := decodeProps(props)
		raw := e.EvalRaw(props)
		if r := e.EvalMap(m); r != raw {
			t.Fatalf("%q: EvalRaw %v, EvalMap %v over %q", sel, raw, r, props)
		}
		if r := e.Eval(mapProps(m)); r != raw {
			t.Fatalf("%q: EvalRaw %v, Eval %v over %q", sel, raw, r, props)
		}
		if e.MatchRaw(props) != (raw == True) {
			t.Fatalf("MatchRaw disagrees with EvalRaw")
		}
	})
}

// TestEvalRawDecodesLikeRocketMQ pins string2messageProperties' rules on stored bytes.
func TestEvalRawDecodesLikeRocketMQ(t *testing.T) {
	cases := []struct {
		name  string
		props string
		sel   string
		want  Result
	}{
		{"the last of repeated names wins", "a\x01y\x02a\x01x\x02", "a = 'x'", True},
		{"a value may contain 0x01", "a\x01x\x01y\x02", "a = 'x\x01y'", True},
		{"an empty value is no property", "a\x01\x02", "a IS NULL", True},
		{"an empty name is skipped", "\x01v\x02a\x015\x02", "a = 5", True},
		{"a pair without 0x01 is skipped", "abc\x02a\x015\x02", "a = 5", True},
		{"no final 0x02", "a\x015", "a = 5", True},
		{"nothing", "", "a IS NULL", True},
		{"names are exact", "A\x015\x02", "a IS NULL", True},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Parse(c.sel)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.EvalRaw([]byte(c.props)); got != c.want {
				t.Fatalf("%q over %q: %v, want %v", c.sel, c.props, got, c.want)
			}
			if got := e.EvalMap(decodeProps([]byte(c.props))); got != c.want {
				t.Fatalf("reference decoding: %v, want %v", got, c.want)
			}
		})
	}
}

// TestEvalRawManyProperties covers selectors reading more properties than EvalRaw resolves
// on the stack.
func TestEvalRawManyProperties(t *testing.T) {
	var terms []string
	p := P{}
	for i := 0; i < 3*inlineSlots; i++ {
		name := "p" + strings.Repeat("x", i)
		terms = append(terms, name+" = '1'")
		p[name] = "1"
	}
	e, err := Parse(strings.Join(terms, " AND "))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Properties()) != 3*inlineSlots {
		t.Fatalf("%d properties", len(e.Properties()))
	}
	for i := 0; i < 3; i++ { // pooled buffers are reused clean
		if got := e.EvalRaw(rawProps(p)); got != True {
			t.Fatalf("all set: %v", got)
		}
		if got := e.EvalRaw(nil); got != Unknown {
			t.Fatalf("none set: %v", got)
		}
	}
}
