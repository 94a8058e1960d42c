package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func queryExt(topic, key string, maxNum int, begin, end int64) map[string]string {
	return map[string]string{"topic": topic, "key": key, "maxNum": strconv.Itoa(maxNum),
		"beginTimestamp": strconv.FormatInt(begin, 10), "endTimestamp": strconv.FormatInt(end, 10)}
}

func TestQueryMessageByKeyAndUniqueKey(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	for i := 0; i < 5; i++ {
		p := props("KEYS", "order-"+strconv.Itoa(i)+" shared", "UNIQ_KEY", "U"+strconv.Itoa(i))
		r := invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("Q", i%2, p), []byte("m"+strconv.Itoa(i)))
		require.Equal(t, remoting.Success, r.Code, r.Remark)
	}
	require.Eventually(t, func() bool { return b.store.IndexedOffset() == b.store.MaxOffset() }, 5*time.Second, 2*time.Millisecond)
	now := time.Now().UnixMilli()

	resp := invoke(t, c, b.Addr(), remoting.QueryMessage, queryExt("Q", "order-3", 32, 0, now+1000), nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	recs := decodeRecords(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "m3", string(recs[0].Body))
	require.NotEmpty(t, resp.Ext("indexLastUpdateTimestamp"))
	phy, err := strconv.ParseInt(resp.Ext("indexLastUpdatePhyoffset"), 10, 64)
	require.NoError(t, err)
	require.Positive(t, phy)

	resp = invoke(t, c, b.Addr(), remoting.QueryMessage, queryExt("Q", "shared", 3, 0, now+1000), nil)
	require.Equal(t, remoting.Success, resp.Code)
	recs = decodeRecords(t, resp.Body)
	require.Len(t, recs, 3, "maxNum")
	require.Equal(t, "m0", string(recs[0].Body), "oldest first")

	// A unique-key query ignores maxNum (RocketMQ's defaultQueryMaxNum).
	ext := queryExt("Q", "U4", 0, 0, now+1000)
	ext[extUniqueKeyQuery] = "true"
	resp = invoke(t, c, b.Addr(), remoting.QueryMessage, ext, nil)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "m4", string(decodeRecords(t, resp.Body)[0].Body))

	for _, q := range []map[string]string{
		queryExt("Q", "nope", 32, 0, now+1000),
		queryExt("Other", "order-3", 32, 0, now+1000),
		queryExt("Q", "order-3", 32, 0, 1000),
	} {
		resp = invoke(t, c, b.Addr(), remoting.QueryMessage, q, nil)
		require.Equal(t, remoting.QueryNotFound, resp.Code, q)
		require.Equal(t, "can not find message, maybe time range not correct", resp.Remark)
		require.NotEmpty(t, resp.Ext("indexLastUpdatePhyoffset"))
	}
	for _, q := range []map[string]string{
		{"topic": "Q", "maxNum": "1", "beginTimestamp": "0", "endTimestamp": "1"},
		{"topic": "Q", "key": "k", "maxNum": "x", "beginTimestamp": "0", "endTimestamp": "1"},
		{"topic": "Q", "key": "k", "maxNum": "1", "endTimestamp": "1"},
	} {
		resp = invoke(t, c, b.Addr(), remoting.QueryMessage, q, nil)
		require.Equal(t, remoting.SystemError, resp.Code, q)
	}
}

func TestQueryMessageIndexDisabled(t *testing.T) {
	cfg := testConfig(t)
	cfg.MessageIndexEnable = false
	b := startBroker(t, cfg)
	c := newTestClient(t)
	r := invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("Q", 0, props("KEYS", "k")), []byte("m"))
	require.Equal(t, remoting.Success, r.Code)
	resp := invoke(t, c, b.Addr(), remoting.QueryMessage, queryExt("Q", "k", 32, 0, time.Now().UnixMilli()+1000), nil)
	require.Equal(t, remoting.QueryNotFound, resp.Code)
	require.Contains(t, resp.Remark, "messageIndexEnable=false")
}

func TestConfigIndexKeys(t *testing.T) {
	cfg := testConfig(t)
	cfg.MaxHashSlotNum = 0
	require.ErrorContains(t, cfg.Validate(), "maxHashSlotNum")
	cfg = testConfig(t)
	cfg.MaxIndexNum = -1
	require.ErrorContains(t, cfg.Validate(), "maxIndexNum")
	cfg.MessageIndexEnable = false
	require.NoError(t, cfg.Validate())
}
