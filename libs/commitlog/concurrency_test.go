package commitlog

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// Appenders, consumers and a replica run at once; afterwards every queue is
// complete and the replica is byte-identical.
func TestConcurrentAppendReadReplicate(t *testing.T) {
	for _, wb := range []int{0, 8 << 10} {
		t.Run(fmt.Sprintf("writebuffer=%d", wb), func(t *testing.T) {
			cfg := testConfig(vfs.NewMem())
			cfg.WriteBuffer = wb
			cfg.FlushDiskType = SyncFlush
			master := openStore(t, cfg)
			defer master.Close()
			replica := openStore(t, testConfig(vfs.NewMem()))
			defer replica.Close()
			const appenders, per = 4, 150
			var wg sync.WaitGroup
			var done atomic.Bool
			errs := make(chan error, 16)
			for a := 0; a < appenders; a++ {
				wg.Add(1)
				go func(a int) {
					defer wg.Done()
					for i := 0; i < per; i++ {
						r, err := master.Append(msg("C", int32(a), fmt.Sprintf("%d-%d", a, i), ""))
						if err != nil {
							errs <- err
							return
						}
						if i%10 == 0 {
							if err := <-master.WaitFlush(r.EndOffset, time.Now().Add(10*time.Second)); err != nil {
								errs <- err
								return
							}
						}
					}
				}(a)
			}
			// Consumers poll while appends run.
			var cwg sync.WaitGroup
			for q := 0; q < appenders; q++ {
				cwg.Add(1)
				go func(q int32) {
					defer cwg.Done()
					next := int64(0)
					for next < per {
						g := master.GetMessages("C", q, next, 32, 1<<20, nil)
						for i, rec := range g.Records {
							r, _, err := DecodeRecord(rec)
							if err != nil || string(r.Body) != fmt.Sprintf("%d-%d", q, next+int64(i)) {
								errs <- fmt.Errorf("queue %d offset %d: %v %q", q, next+int64(i), err, r.Body)
								return
							}
						}
						if g.Status == Found || g.Status == NoMatchedMessage {
							next = g.NextBeginOffset
						} else {
							time.Sleep(200 * time.Microsecond)
						}
					}
				}(int32(q))
			}
			// Replica follows.
			cwg.Add(1)
			go func() {
				defer cwg.Done()
				for {
					off := replica.MaxOffset()
					if off < master.MaxOffset() {
						data, err := master.ReadRaw(off, 4096)
						if err != nil {
							errs <- err
							return
						}
						if err := replica.AppendRaw(off, data); err != nil {
							errs <- err
							return
						}
						continue
					}
					if done.Load() && off == master.MaxOffset() {
						return
					}
					time.Sleep(100 * time.Microsecond)
				}
			}()
			wg.Wait()
			require.NoError(t, master.commit())
			done.Store(true)
			cwg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Equal(t, master.MaxOffset(), replica.MaxOffset())
			for off := int64(0); off < master.MaxOffset(); {
				a, err := master.ReadRaw(off, 1<<20)
				require.NoError(t, err)
				b, err := replica.ReadRaw(off, 1<<20)
				require.NoError(t, err)
				require.True(t, bytes.Equal(a, b))
				off += int64(len(a))
			}
			waitDispatched(t, replica)
			for q := int32(0); q < appenders; q++ {
				require.Equal(t, int64(per), replica.QueueMaxOffset("C", q))
			}
		})
	}
}
