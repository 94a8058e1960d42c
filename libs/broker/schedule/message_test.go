package schedule

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog"
)

func TestToScheduleRestoreRoundTrip(t *testing.T) {
	levels := DefaultLevels()
	props := map[string]string{"TAGS": "tagA", "KEYS": "k1 k2", "UNIQ_KEY": "ABC", "WAIT": "true", "DELAY": "3", "ORIGIN_MESSAGE_ID": "X", "RETRY_TOPIC": "Orig"}
	orig := commitlog.Message{
		Topic: "%RETRY%g1", QueueID: 5, Flag: 9, Body: []byte("payload"),
		Properties: string(commitlog.AppendProperties(nil, props)), SysFlag: commitlog.SysFlagCompressed,
		BornTimestamp: 1234, BornHost: netip.MustParseAddrPort("10.0.0.1:4000"), ReconsumeTimes: 3,
	}
	m := orig
	require.NoError(t, levels.ToSchedule(&m, 3))
	require.Equal(t, Topic, m.Topic)
	require.Equal(t, int32(2), m.QueueID)
	p := commitlog.ParseProperties(m.Properties)
	require.Equal(t, "%RETRY%g1", p[PropertyRealTopic])
	require.Equal(t, "5", p[PropertyRealQID])
	require.Equal(t, "3", p[PropertyDelay])
	for k, v := range props {
		if k != PropertyDelay {
			require.Equal(t, v, p[k], k)
		}
	}

	// Store it and read the record back, as the service does.
	raw := commitlog.AppendRecord(nil, &commitlog.Record{
		QueueID: m.QueueID, Flag: m.Flag, Body: m.Body, Topic: m.Topic, Properties: m.Properties,
		SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		StoreTimestamp: 99999, StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"),
		ReconsumeTimes: m.ReconsumeTimes, BodyCRC: commitlog.BodyCRC(m.Body),
	})
	rec, _, err := commitlog.DecodeRecord(raw)
	require.NoError(t, err)
	back, err := Restore(rec)
	require.NoError(t, err)
	require.Equal(t, orig.Topic, back.Topic)
	require.Equal(t, orig.QueueID, back.QueueID)
	require.Equal(t, orig.Flag, back.Flag)
	require.Equal(t, orig.Body, back.Body)
	require.Equal(t, orig.SysFlag, back.SysFlag)
	require.Equal(t, orig.BornTimestamp, back.BornTimestamp)
	require.Equal(t, orig.BornHost, back.BornHost)
	require.Equal(t, orig.ReconsumeTimes, back.ReconsumeTimes)
	bp := commitlog.ParseProperties(back.Properties)
	require.NotContains(t, bp, PropertyDelay)
	require.NotContains(t, bp, "WAIT")
	require.Equal(t, "%RETRY%g1", bp[PropertyRealTopic])
	require.Equal(t, "5", bp[PropertyRealQID])
	for k, v := range props {
		if k != PropertyDelay && k != "WAIT" {
			require.Equal(t, v, bp[k], k)
		}
	}
}

func TestToScheduleClampsAndRefuses(t *testing.T) {
	levels := DefaultLevels()
	m := commitlog.Message{Topic: "T", QueueID: 1}
	require.NoError(t, levels.ToSchedule(&m, 40))
	require.Equal(t, int32(17), m.QueueID)
	require.Equal(t, "18", commitlog.ParseProperties(m.Properties)[PropertyDelay])

	m = commitlog.Message{Topic: "T"}
	require.ErrorIs(t, levels.ToSchedule(&m, 0), ErrInvalidLevel)
	require.Equal(t, "T", m.Topic)

	prepared := commitlog.Message{Topic: "T", SysFlag: commitlog.SysFlagTxPrepared}
	require.NoError(t, levels.ToSchedule(&prepared, 2))
	require.Equal(t, "T", prepared.Topic)
	committed := commitlog.Message{Topic: "T", SysFlag: commitlog.SysFlagTxCommit}
	require.NoError(t, levels.ToSchedule(&committed, 2))
	require.Equal(t, Topic, committed.Topic)
}

func TestRestoreRejects(t *testing.T) {
	for name, rec := range map[string]*commitlog.Record{
		"other topic": {Topic: "T", Properties: "REAL_TOPIC\x01A\x02REAL_QID\x010\x02"},
		"no real":     {Topic: Topic},
		"bad topic":   {Topic: Topic, Properties: "REAL_TOPIC\x01a b\x02REAL_QID\x010\x02"},
		"bad qid":     {Topic: Topic, Properties: "REAL_TOPIC\x01A\x02REAL_QID\x01x\x02"},
		"neg qid":     {Topic: Topic, Properties: "REAL_TOPIC\x01A\x02REAL_QID\x01-1\x02"},
	} {
		_, err := Restore(rec)
		require.ErrorIs(t, err, ErrNotScheduled, name)
	}
}

func TestTagsCode(t *testing.T) {
	l, err := ParseLevels("100ms 300ms 1s")
	require.NoError(t, err)
	tc := TagsCode(l)
	// The hook reads the stored properties bytes.
	hook := func(topic string, m map[string]string, ts int64) int64 {
		return tc(topic, commitlog.Props(commitlog.AppendProperties(nil, m)), ts)
	}
	require.Equal(t, int64(1000+300), hook(Topic, map[string]string{"DELAY": "2", "TAGS": "x"}, 1000))
	require.Equal(t, int64(1000+1000), hook(Topic, map[string]string{"DELAY": "9"}, 1000), "clamped to the highest level")
	require.Equal(t, int64(1000), hook(Topic, map[string]string{}, 1000), "no DELAY: due at once")
	require.Equal(t, int64(1000), hook(Topic, map[string]string{"DELAY": "zz"}, 1000))
	require.Equal(t, int64(commitlog.JavaStringHash("TagA")), hook("T", map[string]string{"TAGS": "TagA"}, 1000))
	require.Equal(t, commitlog.DefaultTagsCode("TAGS\x01TagA\x02"), hook("T", map[string]string{"TAGS": "TagA"}, 1000))
	require.Equal(t, int64(0), hook("T", map[string]string{"DELAY": "1"}, 1000))
}

func FuzzRestore(f *testing.F) {
	f.Add("REAL_TOPIC\x01A\x02REAL_QID\x010\x02DELAY\x011\x02")
	f.Add("REAL_TOPIC\x01\x02REAL_QID\x01999999999999\x02")
	f.Fuzz(func(t *testing.T, props string) {
		m, err := Restore(&commitlog.Record{Topic: Topic, Properties: props})
		if err != nil {
			return
		}
		if commitlog.ValidateTopic(m.Topic) != nil || m.QueueID < 0 {
			t.Fatalf("restored an unusable target %q/%d", m.Topic, m.QueueID)
		}
		if _, ok := commitlog.ParseProperties(m.Properties)[PropertyDelay]; ok {
			t.Fatal("DELAY kept")
		}
	})
}

func TestRetryLevel(t *testing.T) {
	require.Equal(t, 3, RetryLevel(0, 0))
	require.Equal(t, 5, RetryLevel(0, 2))
	require.Equal(t, 7, RetryLevel(7, 2))
	l := DefaultLevels()
	m := commitlog.Message{Topic: "%RETRY%g"}
	require.NoError(t, l.ToSchedule(&m, RetryLevel(0, 20)))
	require.Equal(t, int32(17), m.QueueID, "clamped to level 18")
}
