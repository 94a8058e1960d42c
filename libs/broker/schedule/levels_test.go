package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseLevels(t *testing.T) {
	cases := []struct {
		in      string
		want    Levels
		errPart string
	}{
		{in: "1s", want: Levels{time.Second}},
		{in: "1s 5s 1m 2h 1d", want: Levels{time.Second, 5 * time.Second, time.Minute, 2 * time.Hour, 24 * time.Hour}},
		{in: "  10s   30s ", want: Levels{10 * time.Second, 30 * time.Second}},
		{in: "100ms 300ms 1s", want: Levels{100 * time.Millisecond, 300 * time.Millisecond, time.Second}},
		{in: "", errPart: "empty"},
		{in: "   ", errPart: "empty"},
		{in: "1s 5x", errPart: `level 2 "5x"`},
		{in: "1s s", errPart: `level 2 "s"`},
		{in: "ms", errPart: `level 1 "ms"`},
		{in: "1.5s", errPart: `"1.5s"`},
		{in: "0s", errPart: `"0s": delay must be positive`},
		{in: "-1m", errPart: `"-1m": delay must be positive`},
		{in: "1S", errPart: `"1S"`},
		{in: "99999999999999999d", errPart: "too large"},
		{in: "5", errPart: `"5"`},
	}
	for _, c := range cases {
		got, err := ParseLevels(c.in)
		if c.errPart != "" {
			require.ErrorIs(t, err, ErrInvalidLevels, c.in)
			require.ErrorContains(t, err, c.errPart, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

func TestDefaultLevels(t *testing.T) {
	l := DefaultLevels()
	require.Equal(t, 18, l.Max())
	require.Equal(t, DefaultMessageDelayLevel, l.String())
	d, ok := l.Delay(1)
	require.True(t, ok)
	require.Equal(t, time.Second, d)
	d, ok = l.Delay(18)
	require.True(t, ok)
	require.Equal(t, 2*time.Hour, d)
	_, ok = l.Delay(0)
	require.False(t, ok)
	_, ok = l.Delay(19)
	require.False(t, ok)
	require.Equal(t, 18, l.Clamp(40))
	require.Equal(t, 3, l.Clamp(3))
}

func TestLevelsStringRoundTrip(t *testing.T) {
	for _, s := range []string{"100ms 300ms 1s", "1s 90s 2m 3h 1d", DefaultMessageDelayLevel, "1500ms 25h"} {
		l, err := ParseLevels(s)
		require.NoError(t, err)
		back, err := ParseLevels(l.String())
		require.NoError(t, err)
		require.Equal(t, l, back, s)
	}
}

func FuzzParseLevels(f *testing.F) {
	f.Add(DefaultMessageDelayLevel)
	f.Add("100ms 300ms 1s")
	f.Add("1d -1s 0m x")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLevels(s)
		if err != nil {
			return
		}
		for _, d := range l {
			if d <= 0 {
				t.Fatalf("non-positive delay from %q", s)
			}
		}
		back, err := ParseLevels(l.String())
		if err != nil || len(back) != len(l) {
			t.Fatalf("String of %q does not parse back: %v", s, err)
		}
	})
}
