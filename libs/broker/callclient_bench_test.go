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

// BenchmarkCallConsumer measures GET_CONSUMER_RUNNING_INFO forwarded through the broker to a
// client's connection against GET_SYSTEM_TOPIC_LIST_FROM_BROKER, answered by the broker itself,
// in the same run: ratio_to_local is what the extra loopback round trip to the client costs.
func BenchmarkCallConsumer(b *testing.B) {
	br := startBroker(b, testConfig(b))
	admin := newTestClient(b)
	consumer := newTestClient(b)
	info := []byte(`{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"mqTable":{}}`)
	consumer.HandleRequest(remoting.GetConsumerRunningInfo, func(req *remoting.Command) *remoting.Command {
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = info
		return resp
	})
	resp := invoke(b, consumer, br.Addr(), remoting.HeartBeat, nil, heartbeatBody("cid-bench", "bench-g", map[string]string{"T": "*"}))
	require.Equal(b, remoting.Success, resp.Code, resp.Remark)
	const conc, n = 8, 4000
	rate := func(code int32, ext map[string]string) float64 {
		var next, failed atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for g := 0; g < conc; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= n {
					r, err := admin.Invoke(context.Background(), br.Addr(), remoting.NewRequest(code, ext, nil))
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
		local := rate(remoting.GetSystemTopicListFromBroker, nil)
		fwd := rate(remoting.GetConsumerRunningInfo, map[string]string{"consumerGroup": "bench-g", "clientId": "cid-bench"})
		b.ReportMetric(fwd, "forwarded/s")
		b.ReportMetric(local, "local/s")
		b.ReportMetric(fwd/local, "ratio_to_local")
	}
}
