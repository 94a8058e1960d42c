package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker/schedule"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

// recordAt waits until topic/queueID holds more than offset entries and decodes the one at offset.
func recordAt(t *testing.T, b *Broker, topic string, queueID int32, offset int64) (*commitlog.Record, map[string]string) {
	t.Helper()
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset(topic, queueID) > offset }, 5*time.Second, 5*time.Millisecond,
		"%s/%d never reached offset %d", topic, queueID, offset)
	g := b.store.GetMessages(topic, queueID, offset, 1, 0, nil)
	require.NotEmpty(t, g.Records)
	rec, _, err := commitlog.DecodeRecord(g.Records[0])
	require.NoError(t, err)
	return rec, commitlog.ParseProperties(rec.Properties)
}

// TestDelaySendBackLevels: a send-back waits in SCHEDULE_TOPIC_XXXX at level 3 + reconsumeTimes
// (or the level the consumer asked for) with %RETRY%group as its real topic, keeps the original
// id, topic and tags, and reaches the retry topic through the delay service.
func TestDelaySendBackLevels(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	resp := send(t, c, b.Addr(), "DSB", 0, "TagA", "m1")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	_, phys := mustParseMsgID(t, resp.Ext("msgId"))
	ext := map[string]string{"group": "dsb", "offset": strconv.FormatInt(phys, 10), "delayLevel": "0",
		"originMsgId": "IDm1", "originTopic": "DSB", "unitMode": "false", "maxReconsumeTimes": "16", "bname": "broker-a"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)

	// reconsumeTimes 0 → level 3 → schedule queue 2.
	rec, p := recordAt(t, b, schedule.Topic, 2, 0)
	require.Equal(t, "%RETRY%dsb", p[schedule.PropertyRealTopic])
	require.Equal(t, "3", p[schedule.PropertyDelay])
	require.Equal(t, "DSB", p[propRetryTopic])
	require.Equal(t, "IDm1", p[propOriginMsgID])
	require.Equal(t, "TagA", p["TAGS"])
	require.Equal(t, "16", p[propMaxReconsumeTime])
	require.Equal(t, int32(1), rec.ReconsumeTimes)

	// Delivered into the retry topic when due, DELAY gone, the rest kept.
	retry, rp := recordAt(t, b, "%RETRY%dsb", 0, 0)
	require.Empty(t, rp[schedule.PropertyDelay])
	require.Equal(t, "IDm1", rp[propOriginMsgID])
	require.Equal(t, "DSB", rp[propRetryTopic])
	require.Equal(t, "m1", string(retry.Body))
	require.Equal(t, int32(1), retry.ReconsumeTimes)

	// The retry copy sent back again: level 3 + 1; the consumer's own level wins when given.
	ext["offset"] = strconv.FormatInt(retry.PhysicalOffset, 10)
	ext["originMsgId"] = "ignored-once-set"
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)
	rec, p = recordAt(t, b, schedule.Topic, 3, 0)
	require.Equal(t, "4", p[schedule.PropertyDelay])
	require.Equal(t, "IDm1", p[propOriginMsgID], "the first origin id is kept")
	require.Equal(t, "DSB", p[propRetryTopic], "the first topic is kept")
	require.Equal(t, int32(2), rec.ReconsumeTimes)

	ext["delayLevel"] = "1"
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)
	_, p = recordAt(t, b, schedule.Topic, 0, 0)
	require.Equal(t, "1", p[schedule.PropertyDelay])
}

// TestDelaySendBackDeadLetter: past maxReconsumeTimes (from the request, else the group's
// retryMaxTimes) or with delayLevel < 0 the message goes straight to %DLQ%group, which is
// created with one readable and writable queue.
func TestDelaySendBackDeadLetter(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	gc := meta.NewSubscriptionGroupConfig("dlg")
	gc.RetryMaxTimes = 1
	_, err := b.tables.Groups.Put(gc)
	require.NoError(t, err)

	resp := send(t, c, b.Addr(), "DLT", 0, "", "m1")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	_, phys := mustParseMsgID(t, resp.Ext("msgId"))
	// No maxReconsumeTimes in the request: the group's limit (1) applies, reconsumeTimes 0 retries.
	ext := map[string]string{"group": "dlg", "offset": strconv.FormatInt(phys, 10), "delayLevel": "0", "originMsgId": "IDm1"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)
	retry, _ := recordAt(t, b, "%RETRY%dlg", 0, 0)
	_, ok := b.tables.Topics.Get("%DLQ%dlg")
	require.False(t, ok, "no dead letter yet")

	// The retry copy (reconsumeTimes 1) reaches the group's limit.
	ext["offset"] = strconv.FormatInt(retry.PhysicalOffset, 10)
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)
	dead, p := recordAt(t, b, "%DLQ%dlg", 0, 0)
	require.Empty(t, p[schedule.PropertyDelay], "dead letters are not delayed")
	require.Equal(t, "IDm1", p[propOriginMsgID])
	require.Equal(t, "DLT", p[propRetryTopic])
	require.Equal(t, int32(2), dead.ReconsumeTimes)
	tc, ok := b.tables.Topics.Get("%DLQ%dlg")
	require.True(t, ok)
	require.Equal(t, int32(1), tc.ReadQueueNums)
	require.Equal(t, int32(1), tc.WriteQueueNums)
	require.True(t, route.IsReadable(tc.Perm), "an admin must be able to read the DLQ (perm %d)", tc.Perm)

	// delayLevel < 0: dead letter at once, whatever the count.
	ext["offset"] = strconv.FormatInt(phys, 10)
	ext["delayLevel"] = "-1"
	ext["maxReconsumeTimes"] = "16"
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)
	dead, _ = recordAt(t, b, "%DLQ%dlg", 0, 1)
	require.Equal(t, int32(1), dead.ReconsumeTimes)
}

// TestDelayRetryTopicSendAtLimit: the client's fallback send to %RETRY%group carries the raised
// count; reaching maxReconsumeTimes sends it to the DLQ, below it keeps its DELAY.
func TestDelayRetryTopicSendAtLimit(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	ext := sendExt("%RETRY%lim", -1, props("ORIGIN_MESSAGE_ID", "X", "RETRY_TOPIC", "T", "DELAY", "4"))
	ext["reconsumeTimes"] = "1"
	ext["maxReconsumeTimes"] = "2"
	resp := invoke(t, c, b.Addr(), remoting.SendMessage, ext, []byte("below"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	_, p := recordAt(t, b, schedule.Topic, 3, 0)
	require.Equal(t, "%RETRY%lim", p[schedule.PropertyRealTopic])

	ext["reconsumeTimes"] = "2"
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, ext, []byte("at"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	rec, p := recordAt(t, b, "%DLQ%lim", 0, 0)
	require.Equal(t, "at", string(rec.Body))
	require.Equal(t, "X", p[propOriginMsgID])
	require.Equal(t, int64(1), b.store.QueueMaxOffset(schedule.Topic, 3), "the dead letter is not scheduled")
}
