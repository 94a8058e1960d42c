package broker

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker/txn"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// BenchmarkTransactionalSend: a 1 KiB transactional message as the clients send it (the half
// with SEND_MESSAGE, then END_TRANSACTION commit one-way), with 1 and 64 concurrent senders on
// an ASYNC_MASTER, timed until every committed message is in its queue; reported as msgs/s
// and as a ratio to plain 1 KiB sends with the same concurrency measured in the same run on
// the same broker (goal: ratio_to_plain >= 0.5).
func BenchmarkTransactionalSend(b *testing.B) {
	for _, conc := range []int{1, 64} {
		b.Run("conc-"+strconv.Itoa(conc), func(b *testing.B) {
			cfg := testConfig(b)
			cfg.MappedFileSizeCommitLog = 64 << 20
			m := startBroker(b, cfg)
			c := newTestClient(b)
			resp := invoke(b, c, m.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "TB", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
			require.Equal(b, remoting.Success, resp.Code)
			body := make([]byte, 1024)
			// run sends n messages with conc callers and returns the rate once queue 0 of
			// topic holds want entries.
			run := func(n int, one func(i int64) bool, want func() bool) float64 {
				var next, bad atomic.Int64
				var wg sync.WaitGroup
				start := time.Now()
				for g := 0; g < conc; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := next.Add(1); i <= int64(n); i = next.Add(1) {
							if !one(i) {
								bad.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				require.Eventually(b, want, 60*time.Second, time.Millisecond)
				require.Zero(b, bad.Load(), "failed sends")
				return float64(n) / time.Since(start).Seconds()
			}
			plainReq := remoting.NewRequest(remoting.SendMessage, sendExt("TB", 0, "TAGS\x01a\x02"), body)
			plain := func(int64) bool {
				r, err := c.Invoke(context.Background(), m.Addr(), plainReq)
				return err == nil && r.Code == remoting.Success
			}
			var keys atomic.Int64 // every transaction its own UNIQ_KEY, across rounds
			half := func(int64) bool {
				key := "U" + strconv.FormatInt(keys.Add(1), 10)
				ext := sendExt("TB", 0, props("TAGS", "a", "UNIQ_KEY", key, txn.PropTranMsg, "true", txn.PropProducerGroup, "pg"))
				ext["sysFlag"] = strconv.Itoa(int(txn.TypePrepared))
				r, err := c.Invoke(context.Background(), m.Addr(), remoting.NewRequest(remoting.SendMessage, ext, body))
				if err != nil || r.Code != remoting.Success {
					return false
				}
				end := map[string]string{"producerGroup": "pg", "tranStateTableOffset": r.Ext("queueOffset"),
					"commitOrRollback": strconv.Itoa(int(txn.TypeCommit)), "fromTransactionCheck": "false",
					"msgId": r.Ext("msgId"), "transactionId": r.Ext("transactionId")}
				_, off, err := commitlog.ParseOffsetMsgID(r.Ext("msgId"))
				if err != nil {
					return false
				}
				end["commitLogOffset"] = strconv.FormatInt(off, 10)
				return c.InvokeOneway(context.Background(), m.Addr(), remoting.NewRequest(remoting.EndTransaction, end, nil)) == nil
			}
			queued := func(n int64) func() bool {
				return func() bool { return m.store.QueueMaxOffset("TB", 0) >= n }
			}
			// Same-run baseline: plain sends, interleaved with the timed transactional sends in
			// four alternating rounds so that a change of load on a shared machine hits both.
			const rounds = 4
			per := max(b.N/rounds, 1)
			var plainDur, txDur time.Duration
			total := int64(0)
			b.SetBytes(1024)
			b.ResetTimer()
			for r := 0; r < rounds; r++ {
				b.StopTimer()
				start := time.Now()
				total += int64(per)
				run(per, plain, queued(total))
				plainDur += time.Since(start)
				b.StartTimer()
				start = time.Now()
				total += int64(per)
				run(per, half, queued(total))
				txDur += time.Since(start)
			}
			b.StopTimer()
			base := float64(rounds*per) / plainDur.Seconds()
			rate := float64(rounds*per) / txDur.Seconds()
			b.Logf("same-run baseline: plain sends %.0f msgs/s (%d callers)", base, conc)
			b.ReportMetric(rate, "msgs/s")
			b.ReportMetric(base, "plain_msgs/s")
			b.ReportMetric(rate/base, "ratio_to_plain")
		})
	}
}
