package broker

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

func TestConsumerMembership(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c1 := newTestClient(t)
	notified := make(chan string, 16)
	c1.HandleRequest(remoting.NotifyConsumerIdsChanged, func(req *remoting.Command) *remoting.Command {
		notified <- req.Ext("consumerGroup")
		return nil
	})
	resp := invoke(t, c1, b.Addr(), remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "g"}, nil)
	require.Equal(t, remoting.SystemError, resp.Code) // unknown group

	invoke(t, c1, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("10.0.0.1@1", "g", map[string]string{"T": "*"}))
	resp = invoke(t, c1, b.Addr(), remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "g"}, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.JSONEq(t, `{"consumerIdList":["10.0.0.1@1"]}`, string(resp.Body))
	_, ok := b.tables.Topics.Get("%RETRY%g")
	require.True(t, ok)
	_, ok = b.tables.Groups.Get("g")
	require.True(t, ok)

	// A second member joins on another connection: the first is told to rebalance.
	c2 := newTestClient(t)
	invoke(t, c2, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("10.0.0.2@2", "g", map[string]string{"T": "*"}))
	select {
	case g := <-notified:
		require.Equal(t, "g", g)
	case <-time.After(5 * time.Second):
		t.Fatal("no NOTIFY_CONSUMER_IDS_CHANGED on join")
	}
	resp = invoke(t, c1, b.Addr(), remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "g"}, nil)
	require.JSONEq(t, `{"consumerIdList":["10.0.0.1@1","10.0.0.2@2"]}`, string(resp.Body))

	// The second connection closes: it is unregistered and the first notified again.
	for len(notified) > 0 {
		<-notified
	}
	c2.Close()
	select {
	case <-notified:
	case <-time.After(5 * time.Second):
		t.Fatal("no NOTIFY_CONSUMER_IDS_CHANGED on leave")
	}
	require.Eventually(t, func() bool { ids, _ := b.clients.consumerIDs("g"); return len(ids) == 1 }, 5*time.Second, 5*time.Millisecond)

	// UNREGISTER_CLIENT.
	resp = invoke(t, c1, b.Addr(), remoting.UnregisterClient, map[string]string{"clientID": "10.0.0.1@1", "consumerGroup": "g"}, nil)
	require.Equal(t, remoting.Success, resp.Code)
	_, ok = b.clients.consumerIDs("g")
	require.False(t, ok)

	// Expiry of silent clients.
	invoke(t, c1, b.Addr(), remoting.HeartBeat, nil, heartbeatBody("10.0.0.1@1", "g", map[string]string{"T": "*"}))
	b.clients.expire(time.Now().Add(b.cfg.ClientExpiry + time.Second))
	_, ok = b.clients.consumerIDs("g")
	require.False(t, ok)

	resp = invoke(t, newTestClient(t), b.Addr(), remoting.HeartBeat, nil, []byte("{not json"))
	require.Equal(t, remoting.SystemError, resp.Code)
}

func TestAdminCodes(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	addr := b.Addr()
	ok := func(resp *remoting.Command) *remoting.Command {
		t.Helper()
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		return resp
	}
	ok(invoke(t, c, addr, remoting.UpdateAndCreateTopic, map[string]string{"topic": "Adm", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6"}, nil))
	w, err := route.DecodeTopicConfigSerializeWrapper(ok(invoke(t, c, addr, remoting.GetAllTopicConfig, nil, nil)).Body)
	require.NoError(t, err)
	require.Equal(t, int32(2), w.TopicConfigTable["Adm"].WriteQueueNums)
	require.Contains(t, w.TopicConfigTable, "TBW102")
	require.Equal(t, remoting.SystemError, invoke(t, c, addr, remoting.UpdateAndCreateTopic, map[string]string{"topic": "bad topic"}, nil).Code)
	ok(invoke(t, c, addr, remoting.DeleteTopicInBroker, map[string]string{"topic": "Adm"}, nil))
	_, found := b.tables.Topics.Get("Adm")
	require.False(t, found)

	gc := meta.NewSubscriptionGroupConfig("admg")
	gc.RetryMaxTimes = 3
	body, _ := json.Marshal(gc)
	ok(invoke(t, c, addr, remoting.UpdateAndCreateSubscriptionGroup, nil, body))
	all := ok(invoke(t, c, addr, remoting.GetAllSubscriptionGroupConfig, nil, nil)).Body
	require.Contains(t, string(all), `"admg"`)
	require.Equal(t, remoting.SystemError, invoke(t, c, addr, remoting.UpdateAndCreateSubscriptionGroup, nil, []byte("x")).Code)
	ok(invoke(t, c, addr, remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "admg", "topic": "T", "queueId": "0", "commitOffset": "9"}, nil))
	offs, err := meta.DecodeConsumerOffsetSnapshot(ok(invoke(t, c, addr, remoting.GetAllConsumerOffset, nil, nil)).Body)
	require.NoError(t, err)
	require.Equal(t, int64(9), offs.OffsetTable["T@admg"][0])
	ok(invoke(t, c, addr, remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "admg", "cleanOffset": "true"}, nil))
	_, found = b.tables.Groups.Get("admg")
	require.False(t, found)
	_, found = b.tables.Offsets.Query("admg", "T", 0)
	require.False(t, found)

	_, err = meta.DecodeDelayOffsetSnapshot(ok(invoke(t, c, addr, remoting.GetAllDelayOffset, nil, nil)).Body)
	require.NoError(t, err)
	var kv struct {
		Table map[string]string `json:"table"`
	}
	require.NoError(t, json.Unmarshal(ok(invoke(t, c, addr, remoting.GetBrokerRuntimeInfo, nil, nil)).Body, &kv))
	require.Equal(t, RoleAsyncMaster, kv.Table["brokerRole"])
}

func TestSendBackToRetryAndDLQ(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	resp := send(t, c, b.Addr(), "SB", 0, "T1", "orig")
	require.Equal(t, remoting.Success, resp.Code)
	_, phys := mustParseMsgID(t, resp.Ext("msgId"))
	ext := map[string]string{"group": "sbg", "offset": strconv.FormatInt(phys, 10), "delayLevel": "0",
		"originMsgId": resp.Ext("msgId"), "originTopic": "SB", "unitMode": "false", "maxReconsumeTimes": "1"}
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("%RETRY%sbg", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	g := b.store.GetMessages("%RETRY%sbg", 0, 0, 1, 0, nil)
	rec, _, err := commitlog.DecodeRecord(g.Records[0])
	require.NoError(t, err)
	require.Equal(t, "orig", string(rec.Body))
	require.Equal(t, int32(1), rec.ReconsumeTimes)
	p := commitlog.ParseProperties(rec.Properties)
	require.Equal(t, "SB", p["RETRY_TOPIC"])
	require.Equal(t, resp.Ext("msgId"), p["ORIGIN_MESSAGE_ID"])

	// Sending the retry copy back again passes maxReconsumeTimes=1: dead-letter topic.
	ext["offset"] = strconv.FormatInt(rec.PhysicalOffset, 10)
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("%DLQ%sbg", 0) == 1 }, 5*time.Second, 5*time.Millisecond)

	ext["offset"] = "123456789"
	require.Equal(t, remoting.SystemError, invoke(t, c, b.Addr(), remoting.ConsumerSendMsgBack, ext, nil).Code)
}

// TestBadInput: an unknown code, garbage and an oversize frame get the documented answers and
// the broker keeps serving other clients.
func TestBadInput(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	resp := invoke(t, c, b.Addr(), 9999, nil, nil)
	require.Equal(t, remoting.RequestCodeNotSupported, resp.Code)

	// Garbage: the connection is closed.
	g, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	_, _ = g.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	_ = g.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	for {
		if _, err := g.Read(buf); err != nil {
			break
		}
	}
	g.Close()

	// Oversize frame: closed without reading the rest.
	o, err := net.Dial("tcp", b.Addr())
	require.NoError(t, err)
	_, _ = o.Write(binary.BigEndian.AppendUint32(nil, 64<<20))
	_ = o.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = o.Read(buf)
	require.Error(t, err)
	o.Close()

	// Others are still served.
	require.Equal(t, remoting.Success, send(t, newTestClient(t), b.Addr(), "Still", 0, "", "ok").Code)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err = c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": "Still", "queueId": "0"}, nil))
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code)
}

func TestStatusHTTP(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTPPort = freePort(t)
	b := startBroker(t, cfg)
	require.NoError(t, b.Healthy())
	st := b.Status()
	require.Equal(t, RoleAsyncMaster, st.Role)
	require.True(t, st.Running)
	require.NotNil(t, st.HAMaster)
	body := httpGet(t, "http://"+b.HTTPAddr()+"/health", 200)
	require.Equal(t, "ok\n", body)
	body = httpGet(t, "http://"+b.HTTPAddr()+"/status", 200)
	var got Status
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Equal(t, "broker-a", got.BrokerName)
	require.NoError(t, b.Shutdown(context.Background()))
	require.Error(t, b.Healthy())
}

func TestQueueLocks(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	body := func(client string, q ...int) []byte {
		s := `{"consumerGroup":"og","clientId":"` + client + `","mqSet":[`
		for i, id := range q {
			if i > 0 {
				s += ","
			}
			s += `{"topic":"T","brokerName":"broker-a","queueId":` + strconv.Itoa(id) + `}`
		}
		return []byte(s + "]}")
	}
	locked := func(resp *remoting.Command) []int {
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		var out struct {
			Set []struct {
				QueueID int `json:"queueId"`
			} `json:"lockOKMQSet"`
		}
		require.NoError(t, json.Unmarshal(resp.Body, &out))
		ids := []int{}
		for _, q := range out.Set {
			ids = append(ids, q.QueueID)
		}
		return ids
	}
	require.Equal(t, []int{0, 1}, locked(invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, body("a", 0, 1))))
	require.Equal(t, []int{2}, locked(invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, body("b", 1, 2))))
	require.Equal(t, remoting.Success, invoke(t, c, b.Addr(), remoting.UnlockBatchMQ, nil, body("a", 1)).Code)
	require.Equal(t, []int{1, 2}, locked(invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, body("b", 1, 2))))
	// An unrenewed lock expires.
	got, err := b.locks.tryLock("og", "c", []lockQueue{{"T", "broker-a", 0}}, time.Now().Add(lockMaxLive+time.Second))
	require.NoError(t, err)
	require.Equal(t, []lockQueue{{"T", "broker-a", 0}}, got)
	require.Equal(t, remoting.SystemError, invoke(t, c, b.Addr(), remoting.LockBatchMQ, nil, []byte("{")).Code)
}

// TestRetryTopicSendToDLQ: the consumer's fallback send to %RETRY%group past its reconsume
// limit lands in %DLQ%group.
func TestRetryTopicSendToDLQ(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	ext := sendExt("%RETRY%fb", -1, props("ORIGIN_MESSAGE_ID", "X"))
	ext["reconsumeTimes"] = "2"
	ext["maxReconsumeTimes"] = "3"
	resp := invoke(t, c, b.Addr(), remoting.SendMessage, ext, []byte("retry"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("%RETRY%fb", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	ext["reconsumeTimes"] = "4"
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, ext, []byte("dead"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("%DLQ%fb", 0) == 1 }, 5*time.Second, 5*time.Millisecond)
	_, ok := b.tables.Topics.Get("%DLQ%fb")
	require.True(t, ok)
}
