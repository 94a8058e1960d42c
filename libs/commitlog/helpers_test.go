package commitlog

import (
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

func testConfig(fs vfs.FS) Config {
	c := DefaultConfig()
	c.Dir = "/store"
	c.FS = fs
	c.SegmentSize = 8 << 10
	c.CQUnitsPerFile = 16
	c.FlushInterval = 20 * time.Millisecond
	c.SyncFlushTimeout = 2 * time.Second
	c.CleanInterval = time.Hour
	c.CheckpointInterval = 50 * time.Millisecond
	c.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	return c
}

func openStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	require.NoError(t, err)
	return s
}

func msg(topic string, q int32, body string, tags string) *Message {
	props := ""
	if tags != "" {
		props = "TAGS\x01" + tags + "\x02"
	}
	return &Message{
		Topic:         topic,
		QueueID:       q,
		Body:          []byte(body),
		Properties:    props,
		BornTimestamp: 1700000000000,
		BornHost:      netip.MustParseAddrPort("10.0.0.1:5555"),
	}
}

func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	require.NoError(t, s.WaitDispatched(s.MaxOffset(), time.Now().Add(10*time.Second)))
}

func bodyOf(t testing.TB, rec []byte) string {
	t.Helper()
	r, _, err := DecodeRecord(rec)
	require.NoError(t, err)
	return string(r.Body)
}

func mustAppend(t testing.TB, s *Store, m *Message) AppendResult {
	t.Helper()
	r, err := s.Append(m)
	require.NoError(t, err)
	return r
}

func bodyN(i int) string { return fmt.Sprintf("body-%06d", i) }

// countingWrites wraps mem so that every write to a path containing part is counted.
func countingWrites(mem vfs.FS, part string) (vfs.FS, *atomic.Int64) {
	n := new(atomic.Int64)
	return vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if op == vfs.OpWrite && strings.Contains(path, part) {
			n.Add(1)
		}
		return nil
	})), n
}

// appendEach appends message i of topic's queue 0 for i in [from, to), each in a dispatch pass
// of its own.
func appendEach(t testing.TB, s *Store, topic string, from, to int) []AppendResult {
	t.Helper()
	var out []AppendResult
	for i := from; i < to; i++ {
		out = append(out, mustAppend(t, s, msg(topic, 0, bodyN(i), "")))
		waitDispatched(t, s)
	}
	return out
}
