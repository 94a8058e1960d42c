package filter

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// kind is the Java class of a value in RocketMQ's evaluator: literals are Integer, Long,
// Double, String or Boolean; every message property is a String; a missing property is null.
type kind uint8

const (
	kNull   kind = iota
	kBool        // java.lang.Boolean (n is 0 or 1)
	kInt         // java.lang.Integer (n holds an int32)
	kLong        // java.lang.Long
	kDouble      // java.lang.Double (f)
	kString      // java.lang.String (s)
	kErr         // evaluation aborted: RocketMQ throws, and the message does not match
)

type value struct {
	k kind
	n int64
	f float64
	s string
}

var (
	vNull  = value{k: kNull}
	vTrue  = value{k: kBool, n: 1}
	vFalse = value{k: kBool, n: 0}
	vErr   = value{k: kErr}
)

func vBool(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

func (v value) isNumber() bool { return v.k == kInt || v.k == kLong || v.k == kDouble }

// compare is RocketMQ's ComparisonExpression.__compare with string conversion on (the mode its
// parser always builds expressions in). Values of one class compare with compareTo. Otherwise
// the left or right operand is converted as Java does: Integer < Long < Double widen; a String
// facing a number is parsed as that number's class (Integer.valueOf, Long.valueOf,
// Double.valueOf); a String facing a Boolean is Boolean.valueOf. ok is false where Java throws:
// a String that does not parse, and a Boolean on the left of a String (RocketMQ casts the
// Boolean to String there, a ClassCastException). Any other pair of classes compares as -1.
// Neither operand may be null.
func compare(l, r value) (c int, ok bool) {
	if l.k == r.k {
		switch l.k {
		case kBool, kInt, kLong:
			return cmpInt(l.n, r.n), true
		case kDouble:
			return javaDoubleCompare(l.f, r.f), true
		case kString:
			return strings.Compare(l.s, r.s), true
		}
		return -1, true
	}
	switch l.k {
	case kBool:
		if r.k == kString {
			return 0, false
		}
	case kInt, kLong:
		switch r.k {
		case kInt, kLong:
			return cmpInt(l.n, r.n), true
		case kDouble:
			return javaDoubleCompare(float64(l.n), r.f), true
		case kString:
			n, ok := parseJavaInt(r.s, l.k == kLong)
			return cmpInt(l.n, n), ok
		}
	case kDouble:
		switch r.k {
		case kInt, kLong:
			return javaDoubleCompare(l.f, float64(r.n)), true
		case kString:
			f, ok := parseJavaDouble(r.s)
			return javaDoubleCompare(l.f, f), ok
		}
	case kString:
		switch r.k {
		case kBool:
			return cmpInt(b2i(parseJavaBoolean(l.s)), r.n), true
		case kInt, kLong:
			n, ok := parseJavaInt(l.s, r.k == kLong)
			return cmpInt(n, r.n), ok
		case kDouble:
			f, ok := parseJavaDouble(l.s)
			return javaDoubleCompare(f, r.f), ok
		}
	}
	return -1, true
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// javaDoubleCompare is Double.compare: numeric order, with -0.0 below 0.0 and NaN equal to
// itself and above +Infinity.
func javaDoubleCompare(a, b float64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	ab, bb := javaDoubleBits(a), javaDoubleBits(b)
	return cmpInt(ab, bb)
}

func javaDoubleBits(f float64) int64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}

// parseJavaBoolean is Boolean.parseBoolean: "true" in any letter case; anything else is false.
func parseJavaBoolean(s string) bool {
	return len(s) == 4 && strings.EqualFold(s, "true")
}

// parseJavaInt is Integer.parseInt (long64 false) or Long.parseLong (true) in radix 10: an
// optional '+' or '-', then one or more decimal digits, in range. Digits are those of
// Character.digit: any Unicode decimal digit (Nd) of the Basic Multilingual Plane, so "٤٢" is
// 42. No white space is allowed.
func parseJavaInt(s string, long64 bool) (int64, bool) {
	if s == "" {
		return 0, false
	}
	maxV, minV := int64(math.MaxInt32), int64(math.MinInt32)
	if long64 {
		maxV, minV = math.MaxInt64, math.MinInt64
	}
	neg := false
	i := 0
	if s[0] == '-' || s[0] == '+' {
		if len(s) == 1 {
			return 0, false
		}
		neg = s[0] == '-'
		i = 1
	}
	limit := -maxV
	if neg {
		limit = minV
	}
	// Accumulate negatively: the negative range is the larger one.
	var acc int64
	multmin := limit / 10
	for i < len(s) {
		d := -1
		if c := s[i]; c < utf8.RuneSelf {
			if isDigit(c) {
				d = int(c - '0')
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			d = unicodeDigit(r)
			i += size
		}
		if d < 0 || acc < multmin {
			return 0, false
		}
		acc *= 10
		if acc < limit+int64(d) {
			return 0, false
		}
		acc -= int64(d)
	}
	if neg {
		return acc, true
	}
	return -acc, true
}

// unicodeDigit is Character.digit(r, 10) for a non-ASCII character: the value of a decimal
// digit of the BMP, -1 otherwise. Unicode keeps decimal digits in runs of ten from 0 to 9.
func unicodeDigit(r rune) int {
	if r > 0xFFFF || r == utf8.RuneError || !unicode.Is(unicode.Nd, r) {
		return -1
	}
	z := r
	for z > 0 && unicode.Is(unicode.Nd, z-1) {
		z--
	}
	return int(r-z) % 10
}

// parseJavaDouble is Double.valueOf: leading and trailing characters up to U+0020 are trimmed;
// then an optional sign and "NaN", "Infinity", a hexadecimal literal (0x1.8p3, the binary
// exponent required) or a decimal literal (digits with at most one '.', at least one digit,
// an optional exponent), with an optional final f, F, d or D. Overflow is Infinity.
func parseJavaDouble(s string) (float64, bool) {
	lo, hi := 0, len(s)
	for lo < hi && s[lo] <= ' ' {
		lo++
	}
	for hi > lo && s[hi-1] <= ' ' {
		hi--
	}
	s = s[lo:hi]
	if s == "" {
		return 0, false
	}
	i := 0
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		i = 1
	}
	rest := s[i:]
	switch {
	case rest == "":
		return 0, false
	case rest[0] == 'N':
		return math.NaN(), rest == "NaN"
	case rest[0] == 'I':
		if rest != "Infinity" {
			return 0, false
		}
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case len(rest) > 1 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X'):
		return parseJavaHexDouble(s)
	}
	// Decimal: digits and one '.', at least one digit, then [eE][+-]?digits, then [fFdD]?.
	j := i
	digits, dots := 0, 0
	for j < len(s) {
		c := s[j]
		if isDigit(c) {
			digits++
		} else if c == '.' {
			if dots++; dots > 1 {
				return 0, false
			}
		} else {
			break
		}
		j++
	}
	if digits == 0 {
		return 0, false
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		m := k
		for m < len(s) && isDigit(s[m]) {
			m++
		}
		if m == k {
			return 0, false
		}
		j = m
	}
	end := j
	if j < len(s) {
		if j != len(s)-1 || !isFloatSuffix(s[j]) {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s[:end], 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

func isFloatSuffix(c byte) bool { return c == 'f' || c == 'F' || c == 'd' || c == 'D' }

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseJavaHexDouble accepts what Java's hexadecimal pattern accepts:
//
//	[+-]? 0[xX] ( hex+ "."? | hex* "." hex+ ) [pP] [+-]? [0-9]+ [fFdD]?
func parseJavaHexDouble(s string) (float64, bool) {
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i++
	}
	i += 2 // 0x
	mant := 0
	for i < len(s) && isHexDigit(s[i]) {
		i, mant = i+1, mant+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigit(s[i]) {
			i, mant = i+1, mant+1
		}
	}
	if mant == 0 || i >= len(s) || (s[i] != 'p' && s[i] != 'P') {
		return 0, false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	e := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == e {
		return 0, false
	}
	end := i
	if i < len(s) && (i != len(s)-1 || !isFloatSuffix(s[i])) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s[:end], 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}
