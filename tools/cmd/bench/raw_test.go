package main

import (
	"strconv"
	"testing"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// TestSendHeaderBytes: the typed SEND_MESSAGE header writes the very frame the ext map gives
// (what a signed run sends), with and without -keys, message after message.
func TestSendHeaderBytes(t *testing.T) {
	for _, keys := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Keys = keys
		st := newStats()
		queues := []queueRef{
			{brokerName: "broker-a", queueID: 3, addrs: map[int64]string{0: "127.0.0.1:10911"}},
			{brokerName: "broker-\"b\"", queueID: 12, addrs: map[int64]string{0: "127.0.0.1:10912"}},
		}
		fixed, err := newSendTemplates(cfg.Topic, queues)
		require.NoError(t, err)
		p := &rawProducer{cfg: cfg, st: st, fixed: fixed, qids: []string{"3", "12"}, queues: queues}
		typed := p.newSlot()
		require.NotNil(t, typed.hdr)
		require.Nil(t, typed.req.ExtFields)
		mst := newStats()
		mst.runID = st.runID
		pm := &rawProducer{cfg: cfg, st: mst, qids: p.qids, queues: p.queues}
		pm.cfg.AccessKey, pm.cfg.SecretKey = "ak", "sk"
		mapped := pm.newSlot()
		require.Nil(t, mapped.hdr)
		for i := 0; i < 5; i++ {
			p.request(typed)
			pm.request(mapped)
			mapped.req.ExtFields["bornTimestamp"] = strconv.FormatInt(typed.hdr.bornMs, 10) // the same millisecond
			copy(mapped.req.Body, typed.req.Body)                                           // the send time

			require.Equal(t, typed.hdr.properties, mapped.req.ExtFields["properties"])
			want := remoting.AppendFrame(nil, mapped.req)
			got := remoting.AppendFrame(nil, typed.req)
			require.Equal(t, string(want), string(got), "message %d", i)
			dec, err := remoting.DecodeFrame(got[4:])
			require.NoError(t, err)
			require.Equal(t, mapped.req.ExtFields, dec.ExtFields)
		}
	}
}
