package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
)

func TestTimerSend(t *testing.T) {
	cfg := testConfig(t)
	cfg.TimerPrecisionMs = 100
	b := startBroker(t, cfg)
	c := newTestClient(t)
	sent := time.Now().UnixMilli()
	resp := invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("TT", 0, props("TIMER_DELAY_MS", "700", "KEYS", "k1")), []byte("timed"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	_, phys := mustParseMsgID(t, resp.Ext("msgId"))
	raw, err := b.store.ReadRecord(phys)
	require.NoError(t, err)
	held, _, err := commitlog.DecodeRecord(raw)
	require.NoError(t, err)
	require.Equal(t, timer.Topic, held.Topic)
	hp := commitlog.ParseProperties(held.Properties)
	require.Equal(t, "TT", hp["REAL_TOPIC"])
	require.Equal(t, "0", hp["REAL_QID"])
	require.NotEmpty(t, hp["TIMER_OUT_MS"])

	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("TT", 0) == 1 }, 10*time.Second, 5*time.Millisecond)
	g := b.store.GetMessages("TT", 0, 0, 1, 0, nil)
	rec, _, err := commitlog.DecodeRecord(g.Records[0])
	require.NoError(t, err)
	require.Equal(t, "timed", string(rec.Body))
	require.GreaterOrEqual(t, rec.StoreTimestamp, sent+700, "never before the time asked")
	p := commitlog.ParseProperties(rec.Properties)
	require.Equal(t, "k1", p["KEYS"])
	require.Equal(t, "700", p["TIMER_DELAY_MS"])
	require.NotContains(t, p, "REAL_TOPIC")
	require.Equal(t, strconv.FormatInt(held.StoreTimestamp, 10), p["TIMER_ENQUEUE_MS"])
	require.NotEmpty(t, p["TIMER_DEQUEUE_MS"])
	require.Equal(t, int64(1), b.Status().Timer.Delivered)

	// A deliver time already past is stored in its topic at once.
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("TT", 1, props("TIMER_DELIVER_MS", "1000")), []byte("now"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("TT", 1) == 1 }, 10*time.Second, 5*time.Millisecond,
		"dispatched into its own topic (consume queues are built after the append)")

	// RocketMQ's refusals.
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("TT", 0, props("TIMER_DELAY_SEC", strconv.Itoa(3*24*3600+10))), []byte("far"))
	require.Equal(t, remoting.MessageIllegal, resp.Code)
	require.Contains(t, resp.Remark, "max delay 259200000ms")
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("TT", 0, props("TIMER_DELAY_SEC", "x")), []byte("bad"))
	require.Equal(t, remoting.MessageIllegal, resp.Code)
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("TT", 0, props("TIMER_DELIVER_MS", "1000", "TIMER_DEL_UNIQKEY", "TT+x")), []byte("del"))
	require.Equal(t, remoting.MessageIllegal, resp.Code, "a delete marker must be for a future time")

	// A client cannot pose as a delivered copy: TIMER_SOURCE is the timer service's own mark.
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("TT", 2, props(timer.PropertySource, "99999999999:1", "TIMER_DEQUEUE_MS", "1")), []byte("posed"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	_, phys = mustParseMsgID(t, resp.Ext("msgId"))
	raw, err = b.store.ReadRecord(phys)
	require.NoError(t, err)
	posed, _, err := commitlog.DecodeRecord(raw)
	require.NoError(t, err)
	require.NotContains(t, commitlog.ParseProperties(posed.Properties), timer.PropertySource)
}

func TestTimerDisabled(t *testing.T) {
	cfg := testConfig(t)
	cfg.TimerWheelEnable = false
	b := startBroker(t, cfg)
	c := newTestClient(t)
	resp := invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("TT", 0, props("TIMER_DELAY_SEC", "3")), []byte("x"))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "accurate timer message is not enabled, timerWheelEnable is false", resp.Remark)
	require.Equal(t, int64(0), b.store.MaxOffset(), "nothing stored")
}

// A promoted slave delivers the timers still pending at the switch, exactly once, and does not
// deliver again those the old master delivered (it followed them through the replicated copies).
func TestPromotedSlaveContinuesTimers(t *testing.T) {
	acfg := syncMasterConfig(t)
	acfg.TimerPrecisionMs = 100
	a := startBroker(t, acfg)
	bcfg := slaveConfig(t, a.HAAddr())
	bcfg.TimerPrecisionMs = 100
	b := startBroker(t, bcfg)
	a.SetPromotion(PromotionConfig{SlaveID: 1})
	c := newTestClient(t)
	require.Eventually(t, func() bool { return len(a.InSyncSlaves()) == 1 }, 10*time.Second, 5*time.Millisecond)
	for i := range 5 {
		resp := invoke(t, c, a.Addr(), remoting.SendMessage, sendExt("TMR", 0, props("TIMER_DELAY_MS", "200", "KEYS", "early"+strconv.Itoa(i))), []byte("early"+strconv.Itoa(i)))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("TMR", 0) == 5 }, 10*time.Second, 5*time.Millisecond)
	require.Zero(t, b.Status().Timer.Delivered, "the slave never delivers")
	for i := range 5 {
		resp := invoke(t, c, a.Addr(), remoting.SendMessage, sendExt("TMR", 0, props("TIMER_DELAY_MS", "1500", "KEYS", "late"+strconv.Itoa(i))), []byte("late"+strconv.Itoa(i)))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Demote(ctx))
	_, err := b.Promote(ctx, a.Epoch()+1)
	require.NoError(t, err)

	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("TMR", 0) >= 10 }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return b.Status().Timer.Pending == 0 }, 10*time.Second, 10*time.Millisecond)
	seen := map[string]int{}
	for o := range b.store.QueueMaxOffset("TMR", 0) {
		rec, _ := recordAt(t, b, "TMR", 0, o)
		seen[string(rec.Body)]++
	}
	for i := range 5 {
		require.Equal(t, 1, seen["early"+strconv.Itoa(i)], "delivered by the old master only")
		require.Equal(t, 1, seen["late"+strconv.Itoa(i)], "delivered by the new master once")
	}
	require.Equal(t, int64(5), b.Status().Timer.Delivered)
}

// A delete marker replicates with its timers: the promoted slave cancels the timer it names
// and delivers the other one of the slot.
func TestPromotedSlaveKeepsCancellation(t *testing.T) {
	acfg := syncMasterConfig(t)
	acfg.TimerPrecisionMs = 100
	a := startBroker(t, acfg)
	bcfg := slaveConfig(t, a.HAAddr())
	bcfg.TimerPrecisionMs = 100
	b := startBroker(t, bcfg)
	a.SetPromotion(PromotionConfig{SlaveID: 1})
	c := newTestClient(t)
	require.Eventually(t, func() bool { return len(a.InSyncSlaves()) == 1 }, 10*time.Second, 5*time.Millisecond)
	due := strconv.FormatInt(time.Now().UnixMilli()+1500, 10)
	for _, m := range [][]string{
		{"TIMER_DELIVER_MS", due, "UNIQ_KEY", "u1", "KEYS", "one"},
		{"TIMER_DELIVER_MS", due, "UNIQ_KEY", "u2", "KEYS", "two"},
		{"TIMER_DELIVER_MS", due, "UNIQ_KEY", "u3", "TIMER_DEL_UNIQKEY", timer.DeleteKey("TMC", "u1")},
	} {
		resp := invoke(t, c, a.Addr(), remoting.SendMessage, sendExt("TMC", 0, props(m...)), []byte(m[5]))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	}
	require.Eventually(t, func() bool { return b.Status().Timer.Enqueue == 3 }, 10*time.Second, 5*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Demote(ctx))
	_, err := b.Promote(ctx, a.Epoch()+1)
	require.NoError(t, err)

	require.Eventually(t, func() bool { return b.Status().Timer.Cancelled == 1 }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("TMC", 0) == 1 }, 10*time.Second, 5*time.Millisecond)
	rec, _ := recordAt(t, b, "TMC", 0, 0)
	require.Equal(t, "two", string(rec.Body))
	require.Eventually(t, func() bool { return b.Status().Timer.Pending == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, int64(1), b.store.QueueMaxOffset("TMC", 0), "the cancelled timer and the marker never arrive")
	require.Zero(t, a.store.QueueMaxOffset("TMC", 0), "the old master delivered nothing")
}
