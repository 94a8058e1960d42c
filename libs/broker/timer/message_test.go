package timer

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog"
)

var rules = Rules{Enabled: true, PrecisionMs: 1000, MaxDelayMs: 3 * 24 * 3600 * 1000}

func transform(t *testing.T, r Rules, props map[string]string, now int64) (*commitlog.Message, bool, error) {
	t.Helper()
	m := &commitlog.Message{Topic: "T", QueueID: 3, Properties: string(commitlog.AppendProperties(nil, props))}
	ok, err := r.Transform(m, commitlog.ParseProperties(m.Properties), now)
	return m, ok, err
}

func TestTransform(t *testing.T) {
	const now = 1_764_595_200_300
	cases := []struct {
		name  string
		props map[string]string
		out   int64 // 0: not moved to the timer topic
		err   error
	}{
		{"delay sec", map[string]string{PropertyDelaySec: "3"}, now + 3000 - 300, nil},
		{"delay ms", map[string]string{PropertyDelayMs: "1500"}, 1_764_595_201_000, nil},
		{"deliver ms exact multiple goes a slot back", map[string]string{PropertyDeliverMs: "1764595210000"}, 1_764_595_209_000, nil},
		{"sec wins over ms", map[string]string{PropertyDelaySec: "2", PropertyDelayMs: "99999"}, 1_764_595_202_000, nil},
		{"past is due at once", map[string]string{PropertyDeliverMs: "1000"}, 0, nil},
		{"not a number", map[string]string{PropertyDelaySec: "soon"}, 0, ErrIllegal},
		{"beyond max", map[string]string{PropertyDelaySec: strconv.Itoa(3*24*3600 + 1)}, 0, ErrIllegal},
		{"delete marker is a timer of its slot", map[string]string{PropertyDelaySec: "5", PropertyDelUniqKey: "T+k"}, now + 5000 - 300, nil},
		{"delete marker for the past", map[string]string{PropertyDeliverMs: "1000", PropertyDelUniqKey: "T+k"}, 0, ErrIllegal},
		{"already a timer record", map[string]string{PropertyDelaySec: "5", PropertyOutMs: "5"}, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, moved, err := transform(t, rules, c.props, now)
			require.ErrorIs(t, err, c.err)
			if c.out == 0 {
				require.False(t, moved)
				require.Equal(t, "T", m.Topic)
				return
			}
			require.True(t, moved)
			p := commitlog.ParseProperties(m.Properties)
			require.Equal(t, Topic, m.Topic)
			require.Zero(t, m.QueueID)
			require.Equal(t, "T", p[PropertyRealTopic])
			require.Equal(t, "3", p[PropertyRealQID])
			require.Equal(t, strconv.FormatInt(c.out, 10), p[PropertyOutMs])
		})
	}
	_, _, err := transform(t, Rules{PrecisionMs: 1000, MaxDelayMs: 1000}, map[string]string{PropertyDelaySec: "1"}, now)
	require.ErrorIs(t, err, ErrNotEnabled)
	m, moved, err := transform(t, rules, map[string]string{PropertyDelaySec: "1", "DELAY": "2"}, now)
	require.NoError(t, err)
	require.False(t, moved)
	require.NotContains(t, commitlog.ParseProperties(m.Properties), PropertyDelaySec, "a delay level wins; the timer properties go")
}

func TestRestore(t *testing.T) {
	props := map[string]string{PropertyDelaySec: "3", "KEYS": "k", PropertyOutMs: "5000", PropertyRealTopic: "T", PropertyRealQID: "2", "WAIT": "true"}
	rec := &commitlog.Record{Topic: Topic, Body: []byte("b"), Flag: 7, StoreTimestamp: 1234, Properties: string(commitlog.AppendProperties(nil, props))}
	m, err := Restore(rec, 6100)
	require.NoError(t, err)
	require.Equal(t, "T", m.Topic)
	require.Equal(t, int32(2), m.QueueID)
	p := commitlog.ParseProperties(m.Properties)
	require.Equal(t, map[string]string{PropertyDelaySec: "3", "KEYS": "k", PropertyOutMs: "5000", PropertyEnqueueMs: "1234", PropertyDequeueMs: "6100"}, p)
	_, _, ok := DeliveredSource(m.Topic, p)
	require.False(t, ok, "a copy without TIMER_SOURCE tells nothing")
	m, err = restore(rec, 6100, sourceOf(Entry{Slot: 6000, QueueOffset: 9}))
	require.NoError(t, err)
	slot, qoff, ok := DeliveredSource(m.Topic, commitlog.ParseProperties(m.Properties))
	require.True(t, ok)
	require.Equal(t, []int64{6000, 9}, []int64{slot, qoff})

	for _, bad := range []map[string]string{{PropertyOutMs: "1", PropertyRealQID: "0"}, {PropertyOutMs: "1", PropertyRealTopic: Topic, PropertyRealQID: "0"}, {PropertyRealTopic: "T", PropertyRealQID: "0"}, {PropertyOutMs: "1", PropertyRealTopic: "T", PropertyRealQID: "-1"}} {
		rec.Properties = string(commitlog.AppendProperties(nil, bad))
		_, err := Restore(rec, 0)
		require.ErrorIs(t, err, ErrNotTimer)
	}
}
