package timer

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// flushPutter appends and waits for the fsync: what a SYNC_FLUSH delivery would do.
type flushPutter struct{ store *commitlog.Store }

func (p flushPutter) Put(m *commitlog.Message) error {
	res, err := p.store.Append(m)
	if err != nil {
		return err
	}
	return <-p.store.WaitFlush(res.EndOffset, time.Now().Add(5*time.Second))
}

func openMem(t *testing.T, fsys *vfs.MemFS) (*commitlog.Store, *Service) {
	cfg := commitlog.DefaultConfig()
	cfg.Dir = "/store"
	cfg.FS = fsys
	cfg.SegmentSize = 1 << 20
	cfg.CQUnitsPerFile = 1000
	cfg.FlushDiskType = commitlog.SyncFlush
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	cfg.Logger = quiet()
	st, err := commitlog.Open(cfg)
	require.NoError(t, err)
	tc := DefaultConfig()
	tc.Dir = "/store/timer"
	tc.FS = fsys
	tc.PrecisionMs = 100
	tc.BucketSpan = time.Second
	tc.FlushInterval = 50 * time.Millisecond
	tc.IndexSyncInterval = 200 * time.Millisecond
	tc.Logger = quiet()
	s, err := New(tc, st, flushPutter{st})
	require.NoError(t, err)
	st.OnDispatch(s.OnDispatch)
	return st, s
}

// keysIn returns how often each KEYS value is in topic T queue 1.
func keysIn(t *testing.T, st *commitlog.Store) map[string]int {
	seen := map[string]int{}
	for off := int64(0); off < st.QueueMaxOffset("T", 1); off++ {
		res := st.GetMessages("T", 1, off, 1, 0, nil)
		require.Equal(t, commitlog.Found, res.Status, "offset %d", off)
		rec, _, err := commitlog.DecodeRecord(res.Records[0])
		require.NoError(t, err)
		seen[commitlog.ParseProperties(rec.Properties)["KEYS"]]++
	}
	return seen
}

// TestPowerLossLosesNoTimer cuts the power (vfs.MemFS.CrashClone: unsynced writes survive or
// not, sector by sector) while timers are being delivered, several times, and requires every
// acknowledged timer in its topic after recovery.
func TestPowerLossLosesNoTimer(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		fsys := vfs.NewCrashableMem()
		st, s := openMem(t, fsys)
		s.Start()
		s.StartDelivery()
		const n = 150
		born := netip.MustParseAddrPort("127.0.0.1:5000")
		for i := range n {
			now := time.Now().UnixMilli()
			props := map[string]string{PropertyDelayMs: strconv.Itoa(100 + (i*13)%1200), "KEYS": "k" + strconv.Itoa(i)}
			m := &commitlog.Message{Topic: "T", QueueID: 1, Body: []byte("b"), Properties: string(commitlog.AppendProperties(nil, props)), BornHost: born}
			_, err := Rules{Enabled: true, PrecisionMs: 100, MaxDelayMs: 3600_000}.Transform(m, commitlog.ParseProperties(m.Properties), now)
			require.NoError(t, err)
			res, err := st.Append(m)
			require.NoError(t, err)
			require.NoError(t, <-st.WaitFlush(res.EndOffset, time.Now().Add(5*time.Second)), "acknowledged only once durable")
		}
		require.Eventually(t, func() bool { return st.QueueMaxOffset("T", 1) >= n/2 }, 20*time.Second, 5*time.Millisecond)
		crashed := fsys.CrashClone(seed)
		s.halt()
		_ = st.Close()

		st2, s2 := openMem(t, crashed)
		s2.Start()
		s2.StartDelivery()
		require.Eventually(t, func() bool { return len(keysIn(t, st2)) == n }, 20*time.Second, 20*time.Millisecond, "seed %d", seed)
		require.NoError(t, s2.Stop())
		total := 0
		for _, c := range keysIn(t, st2) {
			total += c
		}
		t.Logf("seed %d: %d timers, %d copies after the power cut (%d repeated)", seed, n, total, total-n)
		require.NoError(t, st2.Close())
	}
}
