package remoting

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Integer ext fields parse with the field's real width, never wrapping, and ranged accessors
// refuse values outside their range with ErrExtRange.
func TestExtIntegersWidthAndRange(t *testing.T) {
	c := NewRequest(SendMessage, map[string]string{
		"q":      "4294967296",
		"neg":    "-1",
		"max32":  "2147483647",
		"over32": "2147483648",
		"min32":  "-2147483648",
		"max64":  "9223372036854775807",
		"over64": "9223372036854775808",
		"space":  " 7 ",
		"float":  "1.5",
		"hex":    "0x10",
		"empty":  "",
	}, nil)
	for _, tc := range []struct {
		key    string
		want32 int64
		err32  error
		want64 int64
		err64  error
	}{
		{"q", 0, ErrExtInvalid, 4294967296, nil},
		{"neg", -1, nil, -1, nil},
		{"max32", math.MaxInt32, nil, math.MaxInt32, nil},
		{"over32", 0, ErrExtInvalid, 2147483648, nil},
		{"min32", math.MinInt32, nil, math.MinInt32, nil},
		{"max64", 0, ErrExtInvalid, math.MaxInt64, nil},
		{"over64", 0, ErrExtInvalid, 0, ErrExtInvalid},
		{"space", 7, nil, 7, nil},
		{"float", 0, ErrExtInvalid, 0, ErrExtInvalid},
		{"hex", 0, ErrExtInvalid, 0, ErrExtInvalid},
		{"empty", 0, ErrExtInvalid, 0, ErrExtInvalid},
		{"absent", 0, ErrExtMissing, 0, ErrExtMissing},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v32, err := c.ExtInt32(tc.key)
			if tc.err32 != nil {
				require.ErrorIs(t, err, tc.err32)
			} else {
				require.NoError(t, err)
				require.EqualValues(t, tc.want32, v32)
			}
			v64, err := c.ExtInt64(tc.key)
			if tc.err64 != nil {
				require.ErrorIs(t, err, tc.err64)
			} else {
				require.NoError(t, err)
				require.Equal(t, tc.want64, v64)
			}
		})
	}
	_, err := c.ExtInt32In("neg", 0, math.MaxInt32)
	require.ErrorIs(t, err, ErrExtRange)
	require.EqualError(t, err, "remoting: ext field out of range: neg=-1 outside [0, 2147483647]")
	_, err = c.ExtInt64In("q", 0, 1<<31)
	require.ErrorIs(t, err, ErrExtRange)
	v, err := c.ExtInt64In("q", 0, math.MaxInt64)
	require.NoError(t, err)
	require.EqualValues(t, 4294967296, v)
	_, err = c.ExtInt32("q")
	require.EqualError(t, err, `remoting: ext field invalid: q="4294967296" is not a 32-bit integer`)
	require.True(t, c.HasExt("q"))
	require.False(t, c.HasExt("empty"))
	require.False(t, c.HasExt("absent"))
}

func FuzzParseExtInt(f *testing.F) {
	for _, s := range []string{"0", "-1", "4294967296", "2147483648", " 12 ", "+5", "1e3", "-9223372036854775809"} {
		f.Add(s)
	}
	for _, s := range []string{"-", "--1", "-0", "007", "999999999999999999", "1000000000000000000", "-2147483648", "٣", " 1", "1\t", "0x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// The digit fast path and the general parser agree on value and on failure.
		for _, bits := range []int{32, 64} {
			want, werr := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
			got, gerr := ParseExtInt("k", s, bits, math.MinInt64, math.MaxInt64)
			if (werr == nil) != (gerr == nil) || got != want && werr == nil {
				t.Fatalf("%q, %d bits: ParseExtInt %d, %v; strconv %d, %v", s, bits, got, gerr, want, werr)
			}
			if gerr != nil && !errors.Is(gerr, ErrExtInvalid) {
				t.Fatalf("%q, %d bits: %v is not ErrExtInvalid", s, bits, gerr)
			}
			if v, ok := plainDecimal(s, bits); ok && (werr != nil || v != want) {
				t.Fatalf("%q, %d bits: plainDecimal %d, strconv %d, %v", s, bits, v, want, werr)
			}
		}
		n, err := ParseExtInt("k", s, 32, math.MinInt32, math.MaxInt32)
		if err == nil && (n < math.MinInt32 || n > math.MaxInt32) {
			t.Fatalf("%q parsed to %d outside int32", s, n)
		}
		m, err := ParseExtInt("k", s, 32, 0, 10)
		if err == nil && (m < 0 || m > 10) {
			t.Fatalf("%q parsed to %d outside [0, 10]", s, m)
		}
	})
}
