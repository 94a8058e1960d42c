package acl

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// DefaultPlainFile is where RocketMQ looks for the ACL file, relative to ROCKETMQ_HOME
// (system property rocketmq.acl.plain.file, default conf/plain_acl.yml).
const DefaultPlainFile = "conf/plain_acl.yml"

// ResolvePath is where a configured ACL file is: an absolute path as it is; a relative one
// under rocketmqHome when that is set (as RocketMQ resolves rocketmq.acl.plain.file), else
// relative to the working directory. An empty path is DefaultPlainFile.
func ResolvePath(path, rocketmqHome string) string {
	if path == "" {
		path = DefaultPlainFile
	}
	if filepath.IsAbs(path) || rocketmqHome == "" {
		return path
	}
	return filepath.Join(rocketmqHome, path)
}

// Config configures a Guard.
type Config struct {
	// Path is the plain_acl.yml to load and watch. Required.
	Path string
	// ReloadInterval is how often the file is read for changes. A changed file is applied
	// once two reads in a row see the same bytes (so a file caught mid-write is not applied),
	// i.e. one to two intervals after the change. Default 1s.
	ReloadInterval time.Duration
	// Logger receives reloads and refusals (refusals at debug level). Default: discards.
	Logger logrus.FieldLogger
}

// DefaultConfig returns the defaults (Path is left empty).
func DefaultConfig() Config {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return Config{ReloadInterval: time.Second, Logger: l}
}

// Validate names the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Path == "":
		return fmt.Errorf("%w: Path is empty", ErrInvalidConfig)
	case c.ReloadInterval < 10*time.Millisecond:
		return fmt.Errorf("%w: ReloadInterval %v < 10ms", ErrInvalidConfig, c.ReloadInterval)
	case c.Logger == nil:
		return fmt.Errorf("%w: Logger is nil", ErrInvalidConfig)
	}
	return nil
}

// Guard is the remoting.Guard of an ACL-enabled server: it decides every request with the
// current Table (Table.Decide) and answers refusals NO_PERMISSION with the decision's remark.
// It reloads the file when it changes; a version that does not load is logged and counted,
// and the last good table keeps serving.
type Guard struct {
	cfg   Config
	log   logrus.FieldLogger
	table atomic.Pointer[Table]

	decisions [numReasons]atomic.Uint64
	reloadsOK atomic.Uint64
	reloadErr atomic.Uint64
	lastOK    atomic.Bool
	loadedAt  atomic.Int64 // unix nanoseconds of the table in use

	mu      sync.Mutex
	watch   reloadState
	stop    chan struct{}
	stopped chan struct{}
}

// NewGuard loads cfg.Path; an error (missing, unreadable or invalid file) is returned as is,
// so a server refuses to start with ACL enabled and no usable file.
func NewGuard(cfg Config) (*Guard, error) {
	if cfg.Logger == nil {
		cfg.Logger = DefaultConfig().Logger
	}
	if cfg.ReloadInterval == 0 {
		cfg.ReloadInterval = DefaultConfig().ReloadInterval
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t, err := LoadFile(cfg.Path)
	if err != nil {
		return nil, err
	}
	g := &Guard{cfg: cfg, log: cfg.Logger.WithField("aclFile", cfg.Path)}
	g.install(t, time.Now())
	g.watch.current = t.Digest
	g.log.WithFields(logrus.Fields{"accounts": len(t.order), "globalWhiteRemoteAddresses": len(t.GlobalWhite)}).Info("ACL enabled")
	return g, nil
}

// NewStaticGuard serves t and never reloads (tests, embedded use).
func NewStaticGuard(t *Table, logger logrus.FieldLogger) *Guard {
	if logger == nil {
		logger = DefaultConfig().Logger
	}
	g := &Guard{cfg: Config{ReloadInterval: time.Second, Logger: logger}, log: logger}
	g.install(t, time.Now())
	return g
}

func (g *Guard) install(t *Table, now time.Time) {
	g.table.Store(t)
	g.lastOK.Store(true)
	g.loadedAt.Store(now.UnixNano())
}

// Table is the table in use.
func (g *Guard) Table() *Table { return g.table.Load() }

// Store replaces the table in use (programs that build tables themselves).
func (g *Guard) Store(t *Table) { g.install(t, time.Now()) }

// Decide decides req from remote ("ip:port", as remoting.ServerConn.RemoteAddr) with the table
// in use, and counts the decision. An address that does not parse matches no white address.
func (g *Guard) Decide(remote string, req *remoting.Command) Decision {
	var addr netip.Addr
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		addr = ap.Addr()
	} else if a, err := netip.ParseAddr(remote); err == nil {
		addr = a
	}
	d := g.table.Load().Decide(addr.Unmap(), req)
	g.decisions[d.Reason].Add(1)
	return d
}

// Admit implements remoting.Guard.
func (g *Guard) Admit(c *remoting.ServerConn, req *remoting.Command) *remoting.Command {
	remote := ""
	if c != nil {
		remote = c.RemoteAddr()
	}
	d := g.Decide(remote, req)
	if d.Allowed() {
		return nil
	}
	remark := d.Remark()
	if lg := g.log; lg != nil {
		lg.WithFields(logrus.Fields{"peer": remote, "code": formatCode(req.Code), "reason": d.Reason.String(), "accessKey": d.AccessKey}).
			Debug("request refused: " + remark)
	}
	return remoting.NewResponse(nil, remoting.NoPermission, remark)
}

// Stats are the guard's counters.
type Stats struct {
	// Decisions counts requests by reason (Reason.String labels).
	Decisions map[string]uint64
	// Reloads and ReloadFailures count applied file versions and versions that did not load.
	Reloads, ReloadFailures uint64
	// LastReloadOK is false while the newest version of the file did not load.
	LastReloadOK bool
	// LoadedAt is when the table in use was loaded.
	LoadedAt time.Time
	// Accounts is the number of accounts in the table in use.
	Accounts int
}

// Stats returns the counters.
func (g *Guard) Stats() Stats {
	s := Stats{Decisions: map[string]uint64{}, Reloads: g.reloadsOK.Load(), ReloadFailures: g.reloadErr.Load(),
		LastReloadOK: g.lastOK.Load(), LoadedAt: time.Unix(0, g.loadedAt.Load()), Accounts: len(g.Table().order)}
	for r := Reason(0); r < numReasons; r++ {
		s.Decisions[r.String()] = g.decisions[r].Load()
	}
	return s
}

// Start watches the file until Close: every ReloadInterval it is read and, once a new version
// is stable, applied (Reload).
func (g *Guard) Start() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stop != nil || g.cfg.Path == "" {
		return
	}
	// The watcher keeps its own copies: Close clears the fields under g.mu.
	stop, stopped := make(chan struct{}), make(chan struct{})
	g.stop, g.stopped = stop, stopped
	go func() {
		defer close(stopped)
		t := time.NewTicker(g.cfg.ReloadInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				g.poll(now, false)
			}
		}
	}()
}

// Close stops the watch.
func (g *Guard) Close() {
	g.mu.Lock()
	stop, stopped := g.stop, g.stopped
	g.stop = nil
	g.mu.Unlock()
	if stop != nil {
		close(stop)
		<-stopped
	}
}

// Reload reads the file now and applies it at once when it changed (no stability wait). It
// returns the load error of a version that was refused; the table in use is kept then.
func (g *Guard) Reload() error { return g.poll(time.Now(), true) }

func (g *Guard) poll(now time.Time, force bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	data, err := readBounded(g.cfg.Path)
	var sum [32]byte
	if err == nil {
		sum = sha256.Sum256(data)
	}
	act := g.watch.observe(sum, err, force)
	switch act {
	case actNone, actWait:
		return nil
	case actRestored:
		g.lastOK.Store(true)
		g.log.Info("ACL file holds the table in use again")
		return nil
	case actUnreadable:
		g.reloadErr.Add(1)
		g.lastOK.Store(false)
		g.log.WithError(err).Error("ACL file unreadable: still serving the last good table")
		return err
	}
	t, err := Parse(data)
	if err != nil {
		g.watch.failed, g.watch.bad = sum, true
		g.reloadErr.Add(1)
		g.lastOK.Store(false)
		g.log.WithError(err).Error("ACL file changed but does not load: still serving the last good table")
		return err
	}
	g.install(t, now)
	g.watch.current, g.watch.bad = sum, false
	g.reloadsOK.Add(1)
	g.log.WithFields(logrus.Fields{"accounts": len(t.order), "globalWhiteRemoteAddresses": len(t.GlobalWhite)}).Info("ACL file reloaded")
	return nil
}

// reloadState decides, from successive reads of the file, when to parse it. Pure: it sees
// digests and read errors, nothing else.
type reloadState struct {
	current [32]byte // digest of the table in use
	pending [32]byte // a new digest seen once, waiting for a second equal read
	failed  [32]byte // digest of the last version that did not parse (reported once)
	readErr string   // last read error reported (reported once)
	// bad: the newest version seen did not load or could not be read, so the table in use is
	// not the file's; a return to the version in use ends it (actRestored).
	bad bool
}

type reloadAction uint8

const (
	actNone       reloadAction = iota // unchanged, or already reported
	actWait                           // new bytes seen once: wait for them to settle
	actParse                          // new, settled bytes: parse and apply
	actUnreadable                     // the file cannot be read (first time for this error)
	actRestored                       // after a refused or unreadable version, the file holds the table in use again
)

func (s *reloadState) observe(sum [32]byte, readErr error, force bool) reloadAction {
	if readErr != nil {
		msg := readErr.Error()
		if msg == s.readErr {
			return actNone
		}
		s.readErr = msg
		s.bad = true
		return actUnreadable
	}
	s.readErr = ""
	switch {
	case sum == s.current:
		s.pending = [32]byte{}
		if s.bad {
			s.bad, s.failed = false, [32]byte{}
			return actRestored
		}
		return actNone
	case sum == s.failed && !force:
		return actNone
	case force || sum == s.pending:
		s.pending = [32]byte{}
		return actParse
	}
	s.pending = sum
	return actWait
}

// QuoteKey quotes an access key for a refusal's remark, cut to 32 bytes: the key comes from the
// peer, and a remark must not echo a long one back.
func QuoteKey(s string) string {
	if len(s) > 32 {
		return fmt.Sprintf("%q...", s[:32])
	}
	return fmt.Sprintf("%q", s)
}
