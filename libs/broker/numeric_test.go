package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// Values no numeric header field may wrap or truncate into something valid.
const (
	over32 = "4294967296"          // 2^32: was stored as queue 0
	over64 = "9223372036854775808" // 2^63
)

// Every numeric ext field of every request the broker serves is parsed with its width in
// RocketMQ's request header (Integer: 32 bits, Long: 64 bits) and checked against the values
// it can mean; a value beyond the width or the range is answered SYSTEM_ERROR (what RocketMQ
// answers for a header it cannot decode) and changes nothing. Each request's base header is
// answered without SYSTEM_ERROR, so each failure below is the field's.
func TestNumericHeaderFieldsRangeChecked(t *testing.T) {
	cfg := testConfig(t)
	b := startBroker(t, cfg)
	c := newTestClient(t)
	const topic = "NumT"
	resp := invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = send(t, c, b.Addr(), topic, 0, "", "first")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	_, phys := mustParseMsgID(t, resp.ExtFields["msgId"])
	offset := strconv.FormatInt(phys, 10)
	require.NoError(t, b.store.WaitDispatched(b.store.MaxOffset(), time.Now().Add(10*time.Second)))

	v2 := func() map[string]string {
		long := sendExt(topic, 1, props("UNIQ_KEY", "v2"))
		short := map[string]string{}
		for s, l := range v2Names {
			if v, ok := long[l]; ok {
				short[s] = v
			}
		}
		return short
	}
	queueExt := func() map[string]string {
		return map[string]string{"topic": topic, "queueId": "0", "consumerGroup": "cg", "timestamp": "0", "commitOffset": "0"}
	}
	pull := func() map[string]string {
		e := pullExt("cg", topic, 0, 0, 4, 0)
		e["subscription"] = "*"
		return e
	}
	type field struct {
		key  string
		bads []string
	}
	for _, rq := range []struct {
		name   string
		code   int32
		ext    func() map[string]string
		body   []byte
		fields []field
	}{
		{"SEND_MESSAGE", remoting.SendMessage, func() map[string]string { return sendExt(topic, 1, props("UNIQ_KEY", "s")) }, []byte("x"), []field{
			{"queueId", []string{over32, "-" + over32, "abc"}},
			{"defaultTopicQueueNums", []string{over32}},
			{"sysFlag", []string{over32, "-1"}},
			{"bornTimestamp", []string{over64}},
			{"flag", []string{over32}},
			{"reconsumeTimes", []string{over32, "-1"}},
			{"maxReconsumeTimes", []string{over32, "-1"}},
		}},
		{"SEND_MESSAGE_V2", remoting.SendMessageV2, v2, []byte("x"), []field{
			{"e", []string{over32}}, {"d", []string{over32}}, {"f", []string{over32, "-1"}}, {"g", []string{over64}},
			{"h", []string{over32}}, {"j", []string{over32, "-1"}}, {"l", []string{over32, "-1"}},
		}},
		{"SEND_BATCH_MESSAGE", remoting.SendBatchMessage, func() map[string]string { return sendExt(topic, 1, "") },
			batchBody([]string{"b1", "b2"}, []string{props("UNIQ_KEY", "b1"), props("UNIQ_KEY", "b2")}), []field{
				{"queueId", []string{over32}}, {"sysFlag", []string{"-1"}}, {"reconsumeTimes", []string{"-1"}},
			}},
		{"PULL_MESSAGE", remoting.PullMessage, pull, nil, []field{
			{"queueId", []string{over32, "-1"}},
			{"queueOffset", []string{over64, "-1"}},
			{"maxMsgNums", []string{over32}},
			{"sysFlag", []string{over32, "-1"}},
			{"commitOffset", []string{over64, "-2"}},
			{"suspendTimeoutMillis", []string{over64, "-1"}},
			{"subVersion", []string{over64}},
		}},
		{"QUERY_CONSUMER_OFFSET", remoting.QueryConsumerOffset, queueExt, nil, []field{{"queueId", []string{over32, "-1"}}}},
		{"UPDATE_CONSUMER_OFFSET", remoting.UpdateConsumerOffset, queueExt, nil, []field{
			{"queueId", []string{over32, "-1"}}, {"commitOffset", []string{over64, "-1"}},
		}},
		{"GET_MAX_OFFSET", remoting.GetMaxOffset, queueExt, nil, []field{{"queueId", []string{over32, "-1"}}}},
		{"GET_MIN_OFFSET", remoting.GetMinOffset, queueExt, nil, []field{{"queueId", []string{over32, "-1"}}}},
		{"GET_EARLIEST_MSG_STORETIME", remoting.GetEarliestMsgStoretime, queueExt, nil, []field{{"queueId", []string{over32, "-1"}}}},
		{"SEARCH_OFFSET_BY_TIMESTAMP", remoting.SearchOffsetByTimestamp, queueExt, nil, []field{
			{"queueId", []string{over32, "-1"}}, {"timestamp", []string{over64}},
		}},
		{"VIEW_MESSAGE_BY_ID", remoting.ViewMessageByID, func() map[string]string { return map[string]string{"offset": offset} }, nil, []field{
			{"offset", []string{over64, "-1"}},
		}},
		{"CONSUMER_SEND_MSG_BACK", remoting.ConsumerSendMsgBack, func() map[string]string {
			return map[string]string{"group": "cg", "offset": offset, "delayLevel": "0", "maxReconsumeTimes": "16", "originMsgId": "x"}
		}, nil, []field{
			{"offset", []string{over64, "-1"}}, {"delayLevel", []string{over32}}, {"maxReconsumeTimes", []string{over32, "-1"}},
		}},
		{"UPDATE_AND_CREATE_TOPIC", remoting.UpdateAndCreateTopic, func() map[string]string {
			return map[string]string{"topic": "NumCreated", "readQueueNums": "2", "writeQueueNums": "2", "perm": "6", "topicSysFlag": "0"}
		}, nil, []field{
			{"readQueueNums", []string{over32, "-1"}}, {"writeQueueNums", []string{over32, "-1"}},
			{"perm", []string{over32, "-1"}}, {"topicSysFlag", []string{over32, "-1"}},
		}},
	} {
		for _, f := range rq.fields {
			for _, bad := range f.bads {
				t.Run(rq.name+"/"+f.key+"="+bad, func(t *testing.T) {
					before := b.store.MaxOffset()
					topics := b.tables.Topics.Len()
					ext := rq.ext()
					ext[f.key] = bad
					resp := invoke(t, c, b.Addr(), rq.code, ext, rq.body)
					require.Equal(t, remoting.SystemError, resp.Code, "%s %s=%s answered %d %q", rq.name, f.key, bad, resp.Code, resp.Remark)
					name := f.key
					if long, ok := v2Names[f.key]; ok && rq.code == remoting.SendMessageV2 {
						name = long // remarks name the field by its long name
					}
					require.Contains(t, resp.Remark, name)
					require.Equal(t, before, b.store.MaxOffset(), "nothing stored")
					require.Equal(t, topics, b.tables.Topics.Len(), "nothing created")
				})
			}
		}
		t.Run(rq.name+"/base", func(t *testing.T) {
			resp := invoke(t, c, b.Addr(), rq.code, rq.ext(), rq.body)
			require.NotEqual(t, remoting.SystemError, resp.Code, "%s base header answered %q", rq.name, resp.Remark)
		})
	}
	off, found := b.tables.Offsets.Query("cg", topic, 0)
	require.True(t, found, "the base UPDATE_CONSUMER_OFFSET committed")
	require.EqualValues(t, 0, off, "no refused commit changed the offset")

	// JSON bodies: lock and unlock queue ids (Java int), subscription group counts and ids.
	for _, qid := range []string{over32, "-1"} {
		for _, code := range []int32{remoting.LockBatchMQ, remoting.UnlockBatchMQ} {
			body := `{"consumerGroup":"cg","clientId":"c1","mqSet":[{"topic":"` + topic + `","brokerName":"broker-a","queueId":` + qid + `}]}`
			resp := invoke(t, c, b.Addr(), code, nil, []byte(body))
			require.Equal(t, remoting.SystemError, resp.Code, "%s queueId %s: %q", remoting.RequestName(code), qid, resp.Remark)
			require.Contains(t, resp.Remark, "queueId")
		}
	}
	require.Empty(t, b.locks.table["cg"], "nothing locked")
	groups := b.tables.Groups.Len()
	for _, body := range []string{
		`{"groupName":"ng","retryQueueNums":` + over32 + `}`,
		`{"groupName":"ng","retryQueueNums":-1}`,
		`{"groupName":"ng","retryMaxTimes":-1}`,
		`{"groupName":"ng","brokerId":-1}`,
		`{"groupName":"ng","brokerId":` + over64 + `}`,
		`{"groupName":"ng","whichBrokerWhenConsumeSlowly":-1}`,
	} {
		resp := invoke(t, c, b.Addr(), remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(body))
		require.Equal(t, remoting.SystemError, resp.Code, "%s: %q", body, resp.Remark)
	}
	require.Equal(t, groups, b.tables.Groups.Len())
}
