package route

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBrokerStatsDataRoundTrip(t *testing.T) {
	d := BrokerStatsData{
		StatsMinute: BrokerStatsItem{Sum: 100, Tps: 1.6666666666666667, Avgpt: 2},
		StatsHour:   BrokerStatsItem{Sum: 100, Tps: 0.16666666666666666, Avgpt: 2},
		StatsDay:    BrokerStatsItem{},
	}
	b := AppendBrokerStatsData(nil, d)
	require.Equal(t, `{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{"avgpt":2.0,"sum":100,"tps":0.16666666666666666},`+
		`"statsMinute":{"avgpt":2.0,"sum":100,"tps":1.6666666666666667}}`, string(b))
	got, err := DecodeBrokerStatsData(b)
	require.NoError(t, err)
	require.Equal(t, d, got)

	// A Java broker's body: exponent notation and a null tps decode too.
	got, err = DecodeBrokerStatsData([]byte(`{"statsDay":{"avgpt":1.0E-4,"sum":3,"tps":null},"statsMinute":{"sum":1,"tps":2.5E7,"avgpt":0}}`))
	require.NoError(t, err)
	require.Equal(t, BrokerStatsData{StatsDay: BrokerStatsItem{Sum: 3, Avgpt: 1e-4}, StatsMinute: BrokerStatsItem{Sum: 1, Tps: 2.5e7}}, got)

	for _, bad := range []string{"", "{", `[]`, `{"statsDay":{"sum":"x"}}`, `{"statsDay":{"sum":1.5}}`} {
		_, err := DecodeBrokerStatsData([]byte(bad))
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
	require.Equal(t, "null", string(AppendJavaDouble(nil, math.NaN())))
	require.Equal(t, "-3.0", string(AppendJavaDouble(nil, -3)))
	require.Equal(t, "0.25", string(AppendJavaDouble(nil, 0.25)))
}

func FuzzBrokerStatsData(f *testing.F) {
	f.Add(AppendBrokerStatsData(nil, BrokerStatsData{StatsMinute: BrokerStatsItem{Sum: 7, Tps: 0.7, Avgpt: 1}}))
	f.Add([]byte(`{"statsDay":{"avgpt":null,"sum":-1,"tps":1e308}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeBrokerStatsData(b)
		if err != nil {
			return
		}
		again, err := DecodeBrokerStatsData(AppendBrokerStatsData(nil, d))
		require.NoError(t, err)
		require.Equal(t, d, again)
	})
}
