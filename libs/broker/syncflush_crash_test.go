package broker

import (
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// Under SYNC_FLUSH the flusher writes the sends every connection queued right before its
// fsync (commitlog FlushQueued). Many producers at once, then a power cut: every send
// answered SEND_OK with flushed=true is in the image, byte-exact, at the offset its answer
// named, and no queue offset holds two messages.
func TestSyncFlushConcurrentSendsSurviveAPowerCut(t *testing.T) {
	mem := vfs.NewCrashableMem()
	cfg := testConfig(t)
	cfg.FlushDiskType = FlushSync
	cfg.StoreFS = mem
	b := startBroker(t, cfg)
	const producers, each = 8, 40
	type acked struct {
		body  string
		queue int
		qoff  int64
		phys  int64
	}
	var mu sync.Mutex
	var got []acked
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			c := newTestClient(t)
			for i := 0; i < each; i++ {
				body := fmt.Sprintf("p%d-%03d", p, i)
				resp := send(t, c, b.Addr(), "SFC", p%4, "", body)
				if resp.Code != remoting.Success || resp.Ext("flushed") != "true" {
					t.Errorf("%s: code %d flushed=%s %s", body, resp.Code, resp.Ext("flushed"), resp.Remark)
					return
				}
				qoff, err := strconv.ParseInt(resp.Ext("queueOffset"), 10, 64)
				if err != nil {
					t.Error(err)
					return
				}
				_, phys, err := commitlog.ParseOffsetMsgID(resp.Ext("msgId"))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got = append(got, acked{body, p % 4, qoff, phys})
				mu.Unlock()
			}
		}(p)
	}
	wg.Wait()
	require.Len(t, got, producers*each)

	scfg := commitlog.DefaultConfig()
	scfg.Dir = cfg.StorePathRootDir
	scfg.SegmentSize = cfg.MappedFileSizeCommitLog
	scfg.FS = mem.CrashClone(7)
	s, err := commitlog.Open(scfg)
	require.NoError(t, err)
	defer s.Close()
	seen := map[[2]int64]string{}
	for _, a := range got {
		raw, err := s.ReadRecord(a.phys)
		require.NoError(t, err, a.body)
		rec, _, err := commitlog.DecodeRecord(raw)
		require.NoError(t, err, a.body)
		require.Equal(t, a.body, string(rec.Body), "offset %d", a.phys)
		require.Equal(t, "SFC", rec.Topic)
		require.EqualValues(t, a.queue, rec.QueueID)
		require.Equal(t, a.qoff, rec.QueueOffset)
		k := [2]int64{int64(a.queue), a.qoff}
		require.NotContains(t, seen, k, "queue %d offset %d holds %s and %s", a.queue, a.qoff, seen[k], a.body)
		seen[k] = a.body
	}
}
