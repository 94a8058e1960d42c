package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// BenchmarkReply measures replies (SEND_REPLY_MESSAGE, stored and pushed to a requester on its
// own connection) per second against plain 1 KiB sends of the same broker in the same run:
// ratio_to_send is what the push (one more loopback round trip) costs.
func BenchmarkReply(b *testing.B) {
	br := startBroker(b, testConfig(b))
	replier := newTestClient(b)
	requester := newTestClient(b)
	var pushed atomic.Int64
	requester.HandleRequest(remoting.PushReplyMessageToClient, func(req *remoting.Command) *remoting.Command {
		pushed.Add(1)
		return remoting.NewResponse(req, remoting.Success, "")
	})
	const clientID = "127.0.0.1@bench-requester"
	hb := []byte(`{"clientID":"` + clientID + `","producerDataSet":[{"groupName":"pg-bench"}],"consumerDataSet":[]}`)
	resp := invoke(b, requester, br.Addr(), remoting.HeartBeat, nil, hb)
	require.Equal(b, remoting.Success, resp.Code, resp.Remark)
	replyTopic := br.cfg.BrokerClusterName + "_REPLY_TOPIC"
	body := make([]byte, 1024)
	const conc, n = 8, 5000
	rate := func(code int32, ext map[string]string) float64 {
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Int64
		start := time.Now()
		for g := 0; g < conc; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= n {
					r, err := replier.Invoke(context.Background(), br.Addr(), remoting.NewRequest(code, ext, body))
					if err != nil || r.Code != remoting.Success {
						failed.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		require.Zero(b, failed.Load())
		return n / time.Since(start).Seconds()
	}
	for i := 0; i < b.N; i++ {
		send := rate(remoting.SendMessage, sendExt("BenchSend", 0, props("UNIQ_KEY", "u")))
		before := pushed.Load()
		reply := rate(remoting.SendReplyMessage, sendExt(replyTopic, 0, props("CORRELATION_ID", "c", "MSG_TYPE", "reply", "REPLY_TO_CLIENT", clientID)))
		require.Equal(b, int64(n), pushed.Load()-before, "every reply pushed once")
		b.ReportMetric(reply, "replies/s")
		b.ReportMetric(send, "sends/s")
		b.ReportMetric(reply/send, "ratio_to_send")
	}
}
