package broker

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
)

// retentionStore lets the suites delete old segments of a real store: every
// segment that is complete, flushed and dispatched goes (its retention time
// is a nanosecond and it runs only when asked), which covers "before offset".
type retentionStore struct{ *commitlog.Store }

func (r retentionStore) DeleteBefore(offset int64) int64 {
	deadline := time.Now().Add(10 * time.Second)
	_ = <-r.WaitFlush(r.MaxOffset(), deadline)
	_ = r.WaitDispatched(r.MaxOffset(), deadline)
	_, _ = r.RunRetention(true)
	return r.MinOffset()
}

// newReplicaStore is a real CommitLog store with small segments, as the HA
// suites want them.
func newReplicaStore(t *testing.T) hawire.Log {
	cfg := commitlog.DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.FS = vfs.Default
	cfg.SegmentSize = 256 << 10
	cfg.MaxMessageSize = 64 << 10
	cfg.FileReservedTime = time.Nanosecond
	cfg.DeleteWhen = nil // never on a schedule: only DeleteBefore deletes
	s, err := commitlog.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return retentionStore{s}
}

// The HA conformance and replication suites of libs/hawire, which run there
// against the in-memory log twin, run here against the real store.
func TestHALogConformanceOnCommitLog(t *testing.T) {
	hawiretest.RunLogConformance(t, newReplicaStore)
}

func TestHAReplicationOnCommitLog(t *testing.T) {
	if testing.Short() {
		t.Skip("replication suite on the real store: skipped with -short")
	}
	hawiretest.RunReplication(t, newReplicaStore)
}
