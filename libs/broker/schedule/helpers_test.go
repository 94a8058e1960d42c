package schedule

import (
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/meta"
)

const testLevels = "100ms 300ms 1s"

var bornHost = netip.MustParseAddrPort("127.0.0.1:50000")

func quietLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return l
}

// env is one broker's worth of store, tables and delivery service on disk.
type env struct {
	t      testing.TB
	dir    string
	levels Levels
	store  *commitlog.Store
	tables *meta.Tables
	svc    atomic.Pointer[Service]
	rec    *recorder
}

func openEnv(t testing.TB, dir string, levels Levels, rec *recorder) *env {
	t.Helper()
	return openEnvWith(t, dir, levels, rec, TagsCode(levels))
}

// openEnvWith opens the store with the given TagsCode hook (nil: the
// store's default, TAGS hash codes everywhere).
func openEnvWith(t testing.TB, dir string, levels Levels, rec *recorder, hook func(string, commitlog.Props, int64) int64) *env {
	t.Helper()
	cfg := commitlog.DefaultConfig()
	cfg.Dir = dir
	cfg.SegmentSize = 256 << 10
	cfg.CQUnitsPerFile = 1000
	cfg.TagsCode = hook
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	cfg.Logger = quietLogger()
	st, err := commitlog.Open(cfg)
	require.NoError(t, err)
	mcfg := meta.DefaultConfig()
	mcfg.StorePathRootDir = dir
	mcfg.Logger = quietLogger()
	tables, err := meta.Open(mcfg)
	require.NoError(t, err)
	e := &env{t: t, dir: dir, levels: levels, store: st, tables: tables, rec: rec}
	rec.setStore(st)
	st.OnDispatch(func(topic string, q int32, max int64) {
		if s := e.svc.Load(); s != nil {
			s.OnDispatch(topic, q, max)
		}
	})
	return e
}

func (e *env) newService(cfg Config, offsets Offsets) *Service {
	e.t.Helper()
	cfg.Levels = e.levels
	if offsets == nil {
		offsets = e.tables.Delay
	}
	s, err := New(cfg, e.store, offsets, e.rec)
	require.NoError(e.t, err)
	e.svc.Store(s)
	return s
}

func (e *env) close() {
	if s := e.svc.Load(); s != nil {
		_ = s.Stop()
	}
	require.NoError(e.t, e.store.Close())
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.IdleRecheck = time.Minute // deliveries must come from timers and Notify
	cfg.RetryBackoff = 5 * time.Millisecond
	cfg.MaxRetryBackoff = 50 * time.Millisecond
	cfg.PersistInterval = 200 * time.Millisecond
	cfg.Logger = quietLogger()
	return cfg
}

type sent struct {
	key     string
	level   int
	topic   string
	qid     int32
	storeTs int64 // ms, store timestamp of the schedule entry
	props   map[string]string
	body    string
}

// send stores a delayed message the way the broker's send path does.
func (e *env) send(topic string, qid int32, level int, key string) sent {
	e.t.Helper()
	props := map[string]string{"KEYS": key, "TAGS": "tagA", "UNIQ_KEY": "U" + key, "LVL": strconv.Itoa(level), PropertyDelay: strconv.Itoa(level)}
	m := &commitlog.Message{
		Topic: topic, QueueID: qid, Flag: 7, Body: []byte("body-" + key),
		Properties:    string(commitlog.AppendProperties(nil, props)),
		BornTimestamp: time.Now().UnixMilli(), BornHost: bornHost, ReconsumeTimes: 2,
	}
	require.NoError(e.t, e.levels.ToSchedule(m, level))
	res, err := e.store.Append(m)
	require.NoError(e.t, err)
	delete(props, PropertyDelay)
	return sent{key: key, level: level, topic: topic, qid: qid, storeTs: res.StoreTimestamp, props: props, body: "body-" + key}
}

type delivery struct {
	key     string
	level   int
	at      time.Time // Put returned
	msg     commitlog.Message
	storeTs int64
}

// recorder is the Putter: it appends to the current store like the broker's
// internal append and remembers every delivery.
type recorder struct {
	mu    sync.Mutex
	store *commitlog.Store
	got   []delivery
	calls int
	fail  func(call int, m *commitlog.Message) error
}

func (r *recorder) setStore(s *commitlog.Store) {
	r.mu.Lock()
	r.store = s
	r.mu.Unlock()
}

func (r *recorder) Put(m *commitlog.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.fail != nil {
		if err := r.fail(r.calls, m); err != nil {
			return err
		}
	}
	res, err := r.store.Append(m)
	if err != nil {
		return err
	}
	p := commitlog.ParseProperties(m.Properties)
	lvl, _ := strconv.Atoi(p["LVL"])
	r.got = append(r.got, delivery{key: p["KEYS"], level: lvl, at: time.Now(), msg: *m, storeTs: res.StoreTimestamp})
	return nil
}

func (r *recorder) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func waitDeliveries(t testing.TB, r *recorder, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return r.count() >= n }, 30*time.Second, 5*time.Millisecond, "want %d deliveries", n)
}

// copyDir copies a store folder as it is at this instant: what the disk holds
// (page cache included) when a process is killed with -9.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	require.NoError(t, err)
}

func percentiles(xs []time.Duration) string {
	if len(xs) == 0 {
		return "none"
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	p := func(q float64) time.Duration { return s[int(q*float64(len(s)-1))] }
	return "n=" + strconv.Itoa(len(s)) + " min=" + s[0].String() + " p50=" + p(0.5).String() + " p90=" + p(0.9).String() + " p99=" + p(0.99).String() + " max=" + s[len(s)-1].String()
}
