package broker

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// ackedSend is one send answered SEND_OK.
type ackedSend struct {
	body   string
	offset int64
}

// TestRoleSwitchUnderLoad switches the master back and forth while senders write to both
// brokers and readers poll status, metrics and configuration (under -race it checks that the
// request paths never race with a switch). Ends with the invariants: every SEND_OK send is in
// the final master's queue at the offset it was answered with, no offset was answered for two
// messages, and a broker never answered SEND_OK while it was a slave.
func TestRoleSwitchUnderLoad(t *testing.T) {
	acfg := syncMasterConfig(t)
	acfg.HTTPPort, acfg.MetricsEnable = freePort(t), true
	a := startBroker(t, acfg)
	bcfg := slaveConfig(t, a.HAAddr())
	bcfg.HTTPPort, bcfg.MetricsEnable = freePort(t), true
	b := startBroker(t, bcfg)
	a.SetPromotion(PromotionConfig{SlaveID: 1})
	b.SetPromotion(PromotionConfig{MasterRole: RoleSyncMaster})
	require.Eventually(t, func() bool { return len(a.InSyncSlaves()) == 1 }, 10*time.Second, 5*time.Millisecond)

	c := newTestClient(t)
	var (
		mu        sync.Mutex
		acked     []ackedSend
		seq       atomic.Int64
		slaveOK   atomic.Int64 // SEND_OK from a broker that was a slave before and after the send
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		brokers   = []*Broker{a, b}
		sentCodes sync.Map
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				br := brokers[i%2]
				wasSlave := !br.IsMaster()
				body := "m" + strconv.FormatInt(seq.Add(1), 10)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				resp, err := c.Invoke(ctx, br.Addr(), remoting.NewRequest(remoting.SendMessage,
					sendExt("L", 0, props("UNIQ_KEY", "ID"+body)), []byte(body)))
				cancel()
				if err != nil {
					continue
				}
				n, _ := sentCodes.LoadOrStore(resp.Code, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
				if resp.Code != remoting.Success {
					continue
				}
				if wasSlave && !br.IsMaster() {
					slaveOK.Add(1)
				}
				off, err := strconv.ParseInt(resp.Ext("queueOffset"), 10, 64)
				if err != nil {
					continue
				}
				mu.Lock()
				acked = append(acked, ackedSend{body: body, offset: off})
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() { // status, metrics and configuration readers during the switches
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, br := range brokers {
				_ = br.Status()
				_ = br.Config()
				_ = br.Epoch()
				_ = br.Healthy()
				if resp, err := http.Get("http://" + br.HTTPAddr() + "/metrics"); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cur, next := a, b
	for round := 0; round < 4; round++ {
		require.Eventually(t, func() bool { return len(cur.InSyncSlaves()) == 1 }, 20*time.Second, 5*time.Millisecond, "round %d", round)
		time.Sleep(100 * time.Millisecond) // let sends flow in this role
		epoch := cur.Epoch()
		require.NoError(t, cur.Demote(ctx))
		ep, err := next.Promote(ctx, epoch+1)
		require.NoError(t, err)
		require.Greater(t, ep, epoch)
		cur.LearnMaster(next.HAServerAddr())
		cur, next = next, cur
	}
	require.Eventually(t, func() bool { return len(cur.InSyncSlaves()) == 1 }, 20*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()

	codes := map[int32]int64{}
	sentCodes.Range(func(k, v any) bool { codes[k.(int32)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("answers by code: %v; acknowledged: %d", codes, len(acked))
	require.Zero(t, slaveOK.Load(), "SEND_OK from a slave")
	require.NotEmpty(t, acked)

	byOffset := map[int64]string{}
	for _, s := range acked {
		if prev, ok := byOffset[s.offset]; ok {
			require.Equal(t, prev, s.body, "offset %d answered for two messages", s.offset)
		}
		byOffset[s.offset] = s.body
	}
	require.NoError(t, cur.Store().WaitDispatched(cur.Store().MaxOffset(), time.Now().Add(10*time.Second)))
	for off, body := range byOffset {
		g := cur.Store().GetMessages("L", 0, off, 1, 1<<20, nil)
		require.Equal(t, commitlog.Found, g.Status, "offset %d (%s)", off, body)
		rec, _, err := commitlog.DecodeRecord(g.Records[0])
		require.NoError(t, err)
		require.Equal(t, body, string(rec.Body), "offset %d", off)
		require.Equal(t, off, rec.QueueOffset, fmt.Sprintf("record at %d", off))
	}
	// The other broker holds the same queue (it follows the final master).
	require.Eventually(t, func() bool { return next.Store().MaxOffset() == cur.Store().MaxOffset() }, 20*time.Second, 5*time.Millisecond)
}
