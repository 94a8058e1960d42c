package schedule

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog"
)

// appendLoopRecord stores what a client send into SCHEDULE_TOPIC_XXXX left behind before
// brokers refused it: a schedule record whose REAL_TOPIC is the schedule topic (with DELAY,
// the original send; without, a copy the looping delivery stored) or empty.
func (e *env) appendLoopRecord(realTopic string, delay bool, key string) {
	e.t.Helper()
	props := map[string]string{PropertyRealTopic: realTopic, PropertyRealQID: "0", "KEYS": key}
	if realTopic == "" {
		delete(props, PropertyRealTopic)
	}
	if delay {
		props[PropertyDelay] = "1"
	}
	_, err := e.store.Append(&commitlog.Message{
		Topic: Topic, QueueID: 0, Body: []byte("loop-" + key),
		Properties:    string(commitlog.AppendProperties(nil, props)),
		BornTimestamp: time.Now().UnixMilli(), BornHost: bornHost,
	})
	require.NoError(e.t, err)
}

// A store that already holds a delivery loop (records in the schedule topic whose real topic
// is the schedule topic itself, or missing) stops looping: those records are delivered
// nowhere, counted as refused, never scheduled again, and the level goes on delivering the
// real messages behind them. The CommitLog stops growing once they are passed.
func TestExistingDeliveryLoopStops(t *testing.T) {
	rec := &recorder{}
	e := openEnv(t, t.TempDir(), mustLevels(t, testLevels), rec)
	defer e.close()
	const loops = 50
	for i := 0; i < loops; i++ {
		switch i % 3 {
		case 0:
			e.appendLoopRecord(Topic, true, "orig-"+strconv.Itoa(i))
		case 1:
			e.appendLoopRecord(Topic, false, "copy-"+strconv.Itoa(i))
		default:
			e.appendLoopRecord("", false, "empty-"+strconv.Itoa(i))
		}
	}
	real := e.send("RealTopic", 0, 1, "real")
	svc := e.newService(testConfig(), nil)
	require.NoError(t, svc.Start())
	waitDeliveries(t, rec, 1)
	require.Eventually(t, func() bool {
		off, _ := e.tables.Delay.Get(1)
		return off == loops+1
	}, 30*time.Second, 5*time.Millisecond, "level 1 passes every record")
	got := rec.deliveries()
	require.Len(t, got, 1, "only the real message is delivered")
	require.Equal(t, real.topic, got[0].msg.Topic)
	st := svc.Stats()[0]
	require.EqualValues(t, loops, st.Refused)
	require.Equal(t, loops+1, int(e.store.QueueMaxOffset(Topic, 0)), "nothing was scheduled again")
	max := e.store.MaxOffset()
	svc.Notify(1)
	require.Never(t, func() bool { return e.store.MaxOffset() != max || rec.count() != 1 }, 300*time.Millisecond, 10*time.Millisecond)

	// After a restart the offsets are past them: nothing is looked at twice.
	require.NoError(t, svc.Stop())
	svc = e.newService(testConfig(), nil)
	require.NoError(t, svc.Start())
	svc.Notify(1)
	require.Never(t, func() bool { return e.store.MaxOffset() != max || svc.Stats()[0].Refused != 0 }, 300*time.Millisecond, 10*time.Millisecond)
}

func TestToScheduleRefusesTheScheduleTopic(t *testing.T) {
	levels := DefaultLevels()
	m := commitlog.Message{Topic: Topic, QueueID: 3, Properties: string(commitlog.AppendProperties(nil, map[string]string{PropertyDelay: "2"}))}
	orig := m
	require.ErrorIs(t, levels.ToSchedule(&m, 2), ErrNoRealTopic)
	require.Equal(t, orig, m, "left unchanged")

	for _, realTopic := range []string{Topic, ""} {
		raw := commitlog.AppendRecord(nil, &commitlog.Record{
			Topic: Topic, Body: []byte("b"), BodyCRC: commitlog.BodyCRC([]byte("b")), BornHost: bornHost, StoreHost: bornHost,
			Properties: string(commitlog.AppendProperties(nil, map[string]string{PropertyRealTopic: realTopic, PropertyRealQID: "0"})),
		})
		r, _, err := commitlog.DecodeRecord(raw)
		require.NoError(t, err)
		_, err = Restore(r)
		require.ErrorIs(t, err, ErrNoRealTopic, "REAL_TOPIC %q", realTopic)
		require.ErrorIs(t, err, ErrNotScheduled)
	}
}
