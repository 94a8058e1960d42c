package failover

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
)

// Node is the broker as the election drives it.
type Node interface {
	// IsMaster reports whether the broker currently serves as master.
	IsMaster() bool
	// Epoch is the broker's HA epoch.
	Epoch() int64
	// MaxOffset is the end of the broker's log (a slave's replicated position).
	MaxOffset() int64
	// Promote makes the broker master at an epoch of at least epoch and returns it.
	Promote(ctx context.Context, epoch int64) (int64, error)
	// Demote makes the broker a slave (writes fenced first).
	Demote(ctx context.Context) error
	// FenceWrites refuses writes until UnfenceWrites.
	FenceWrites(reason string)
	// UnfenceWrites accepts writes again.
	UnfenceWrites()
	// HAAddr is the master's advertised HA address.
	HAAddr() string
	// InSync lists the slave nodes (brokerIds) the HA master counts in sync.
	InSync() []int64
	// CaughtUp reports whether slave node acknowledged everything the master holds.
	CaughtUp(node int64) bool
	// Healthy is the broker's own health (store writable, replication not failed): the lease
	// is passed only while it is nil, so a broker that cannot do its job loses leadership
	// (a master is fenced, then replaced) and cannot take it.
	Healthy() error
	// Follow tells a slave where the master is: its HA address and its client address.
	Follow(haAddr, addr string)
}

// Status is the election state of one node (for HA status).
type Status struct {
	Node          int64   `json:"node"`
	Master        bool    `json:"master"`
	Holder        int64   `json:"lockHolder"` // 0 = free
	HolderAddr    string  `json:"lockHolderAddr,omitempty"`
	Epoch         int64   `json:"epoch"`
	InSync        []int64 `json:"inSync"`
	Fenced        bool    `json:"fenced"`
	LeaseLeftMs   int64   `json:"leaseLeftMs"`
	Promotions    int64   `json:"promotions"`
	Demotions     int64   `json:"demotions"`
	LastPromoteMs int64   `json:"lastPromoteMs"`
}

// Elector runs the election for one node.
type Elector struct {
	cfg  Config
	c    Coordinator
	n    Node
	log  logrus.FieldLogger
	now  func() time.Time
	chk  string
	lk   string
	sk   string
	swk  string
	mu   sync.Mutex // Step and Close
	sess string
	reg  bool

	leaseMu     sync.Mutex // reg, lastPassNote (renew)
	passer      atomic.Bool
	lastPassNot time.Time
	leaseUntil  atomic.Int64 // unix nanos: lastPassSent + LeaseTTL
	leaseFenced atomic.Bool
	published   *State
	pubIndex    uint64
	lastNote    time.Time
	cand        *Candidate // last candidacy written (with candSess)
	candSess    string
	freeSince   time.Time // when this slave first saw the lock free (zero: held)

	stMu sync.Mutex
	st   Status
}

// New validates cfg and prepares an Elector; nothing is contacted until Step or Run.
func New(cfg Config, c Coordinator, n Node) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		l := logrus.New()
		l.SetOutput(io.Discard)
		cfg.Logger = l
	}
	e := &Elector{cfg: cfg, c: c, n: n, now: cfg.Now,
		log: cfg.Logger.WithFields(logrus.Fields{"component": "failover", "node": cfg.Node}),
		chk: CheckID(cfg.Cluster, cfg.BrokerName, cfg.Node),
		lk:  LeaderKey(cfg.Cluster, cfg.BrokerName), sk: StateKey(cfg.Cluster, cfg.BrokerName),
		swk: SwitchoverKey(cfg.Cluster, cfg.BrokerName)}
	e.st.Node = cfg.Node
	return e, nil
}

// Status reports the node's view of the election.
func (e *Elector) Status() Status {
	e.stMu.Lock()
	s := e.st
	s.InSync = slices.Clone(s.InSync)
	e.stMu.Unlock()
	s.Fenced = e.leaseFenced.Load()
	if u := e.leaseUntil.Load(); u != 0 {
		s.LeaseLeftMs = max(0, time.Unix(0, u).Sub(e.now()).Milliseconds())
	}
	return s
}

// Run steps the election every PollInterval and guards the lease every PollInterval/4 until
// ctx ends; then a master fences writes and gives up the lock (a clean handover to a slave).
func (e *Elector) Run(ctx context.Context) {
	e.passer.Store(true)
	e.renew(ctx)
	passDone := make(chan struct{})
	go func() {
		defer close(passDone)
		e.passLoop(ctx)
	}()
	guardDone := make(chan struct{})
	go func() {
		defer close(guardDone)
		t := time.NewTicker(max(e.cfg.PollInterval/4, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				e.Guard()
			}
		}
	}()
	t := time.NewTicker(min(e.cfg.PollInterval, e.cfg.PassInterval))
	defer t.Stop()
	for {
		e.Step(ctx)
		select {
		case <-ctx.Done():
			<-guardDone
			<-passDone
			e.Close()
			return
		case <-t.C:
		}
	}
}

// Close gives up leadership: a master fences writes first, then releases the lock and ends the
// session so that an in-sync slave takes over at once.
func (e *Elector) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*e.cfg.OpTimeout)
	defer cancel()
	if e.n.IsMaster() {
		e.n.FenceWrites("leaving the group: lock released")
		e.leaseFenced.Store(true)
	}
	if e.sess != "" {
		_, _ = e.c.Release(ctx, e.lk, e.sess)
		_ = e.c.DestroySession(ctx, e.sess)
		e.sess = ""
	}
}

// Guard fences a master's writes once its lease may be about to end: lastPassSent + LeaseTTL -
// SafetyMargin has passed without a successful pass. Run calls it often; tests call it directly.
func (e *Elector) Guard() {
	u := e.leaseUntil.Load()
	if u == 0 || !e.n.IsMaster() || e.leaseFenced.Load() {
		return
	}
	if !e.now().Before(time.Unix(0, u).Add(-e.cfg.SafetyMargin)) {
		e.leaseFenced.Store(true)
		e.n.FenceWrites("lease not renewed: the lock may be lost")
		e.log.WithField("leaseEnds", time.Unix(0, u)).Warn("fenced writes: lease not renewed within the safety margin")
	}
}

func (e *Elector) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.OpTimeout)
}

// renew registers the lease check when needed and passes it; the lease then lasts until
// LeaseTTL after the pass was sent.
func (e *Elector) renew(ctx context.Context) bool {
	e.leaseMu.Lock()
	defer e.leaseMu.Unlock()
	if !e.reg {
		octx, cancel := e.op(ctx)
		err := e.c.RegisterLease(octx, e.chk, e.cfg.LeaseTTL)
		cancel()
		if err != nil {
			e.passNote("lease check not registered", err)
			return false
		}
		e.reg = true
	}
	if err := e.n.Healthy(); err != nil {
		e.passNote("broker unhealthy: lease not passed", err)
		return false
	}
	sent := e.now()
	octx, cancel := e.op(ctx)
	err := e.c.PassLease(octx, e.chk)
	cancel()
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "unknown check") {
			e.reg = false // the agent lost the check (restarted without state): register again
		}
		e.passNote("lease not passed", err)
		return false
	}
	e.leaseUntil.Store(sent.Add(e.cfg.LeaseTTL).UnixNano())
	return true
}

// leaseFresh reports whether the lease has more than SafetyMargin left.
func (e *Elector) leaseFresh() bool {
	u := e.leaseUntil.Load()
	return u != 0 && e.now().Before(time.Unix(0, u).Add(-e.cfg.SafetyMargin))
}

// passLoop passes the lease every PassInterval, apart from Step, so that a long promotion
// (dispatcher catch-up, metadata sync) never lets the new master's own lease run out.
func (e *Elector) passLoop(ctx context.Context) {
	t := time.NewTicker(e.cfg.PassInterval)
	defer t.Stop()
	for {
		e.renew(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step runs one round: pass the lease (unless Run's pass loop does), then act on the lock as
// master or slave.
func (e *Elector) Step(ctx context.Context) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if !e.passer.Load() {
		if !e.renew(ctx) {
			return // Guard fences a master in time
		}
	} else if !e.leaseFresh() {
		return // the pass loop is failing; Guard fences a master in time
	}
	var err error
	if e.sess == "" {
		octx, cancel := e.op(ctx)
		e.sess, err = e.c.CreateSession(octx, e.chk)
		cancel()
		if err != nil {
			e.sess = ""
			e.note("session not created", err)
			return
		}
	}
	octx, cancel := e.op(ctx)
	kv, ok, err := e.c.Get(octx, e.lk)
	cancel()
	if err != nil {
		e.note("lock not read", err)
		return
	}
	var leader *Leader
	if ok {
		leader, _ = decode[Leader](kv.Value)
	}
	held := ok && kv.Session != ""
	mine := held && kv.Session == e.sess
	e.stMu.Lock()
	e.st.Holder, e.st.HolderAddr = 0, ""
	if held && leader != nil {
		e.st.Holder, e.st.HolderAddr = leader.Node, leader.Addr
	}
	e.stMu.Unlock()

	if e.n.IsMaster() {
		if !mine {
			e.stepDown(ctx, "lock no longer held")
			return
		}
		if e.leaseFenced.Load() {
			// Passed again before the lease could end, and the lock is still ours.
			e.leaseFenced.Store(false)
			e.n.UnfenceWrites()
			e.log.Info("lease renewed: writes unfenced")
		}
		e.publish(ctx)
		e.switchover(ctx)
		return
	}
	if held && !mine && leader != nil && leader.Node == e.cfg.Node {
		// A previous incarnation of this node (killed and restarted before its lease ended)
		// still holds the lock: end that session so the group can elect.
		octx, cancel := e.op(ctx)
		_ = e.c.DestroySession(octx, kv.Session)
		cancel()
		e.log.WithField("session", kv.Session).Warn("ended this node's stale session")
		return
	}
	e.advertise(ctx)
	if held && !mine {
		e.freeSince = time.Time{}
		if leader != nil && leader.HAAddr != "" {
			e.n.Follow(leader.HAAddr, leader.Addr)
		}
		return
	}
	if mine {
		// Holding the lock as a slave: a promotion failed; let someone else try.
		octx, cancel := e.op(ctx)
		_, _ = e.c.Release(octx, e.lk, e.sess)
		cancel()
		return
	}
	e.tryTakeOver(ctx)
}

func (e *Elector) readState(ctx context.Context) (*State, uint64, error) {
	octx, cancel := e.op(ctx)
	defer cancel()
	kv, ok, err := e.c.Get(octx, e.sk)
	if err != nil || !ok {
		return nil, 0, err
	}
	st, err := decode[State](kv.Value)
	if err != nil {
		return nil, 0, fmt.Errorf("failover: state %s: %w", e.sk, err)
	}
	return st, kv.ModifyIndex, nil
}

func (e *Elector) tryTakeOver(ctx context.Context) {
	st, idx, err := e.readState(ctx)
	if err != nil {
		e.note("state not read", err)
		return
	}
	clean := st.Eligible(e.cfg.Node, false)
	if !clean && (!e.cfg.Unclean || st.Handover != 0) {
		e.note("lock free but this node is not in the in-sync set", nil)
		return
	}
	if e.freeSince.IsZero() {
		e.freeSince = e.now()
	}
	if other, wait := e.deferTo(ctx, st, clean); wait {
		e.note(fmt.Sprintf("lock free: deferring to node %d (further ahead, or still settling)", other), nil)
		return
	}
	if !clean {
		e.log.WithField("inSync", st.InSync).Warn("unclean takeover: this node is not in the published in-sync set; messages the old master acknowledged may be lost")
	}
	start := e.now()
	val := encode(Leader{Node: e.cfg.Node, Addr: e.cfg.Addr, Epoch: e.n.Epoch(), Since: start})
	octx, cancel := e.op(ctx)
	got, err := e.c.Acquire(octx, e.lk, e.sess, val)
	cancel()
	if err != nil {
		e.sess = "" // most likely invalidated; a new one next round
		e.note("lock not acquired", err)
		return
	}
	if !got {
		return
	}
	e.log.Warn("lock acquired: taking over")
	e.freeSince = time.Time{}
	// Bump the epoch with compare-and-set: of two writers only one wins an index.
	var next int64
	var prev *State
	for i := 0; ; i++ {
		if i > 0 {
			if st, idx, err = e.readState(ctx); err != nil {
				e.giveUp(ctx, nil, 0, fmt.Errorf("reading state: %w", err))
				return
			}
		}
		if !st.Eligible(e.cfg.Node, e.cfg.Unclean && (st == nil || st.Handover == 0)) {
			e.giveUp(ctx, nil, 0, fmt.Errorf("no longer eligible"))
			return
		}
		prev = st
		base := e.n.Epoch()
		if st != nil {
			base = max(base, st.Epoch)
		}
		next = base + 1
		octx, cancel := e.op(ctx)
		won, err := e.c.CAS(octx, e.sk, encode(State{Epoch: next, Master: e.cfg.Node, InSync: []int64{e.cfg.Node}}), idx)
		cancel()
		if err == nil && won {
			break
		}
		if i >= 2 {
			e.giveUp(ctx, nil, 0, fmt.Errorf("%w on %s", ErrCASConflict, e.sk))
			return
		}
	}
	ep, err := e.n.Promote(ctx, next)
	if err != nil {
		e.giveUp(ctx, prev, next, err)
		return
	}
	took := e.now().Sub(start)
	e.withdraw(ctx)
	// The broker may have started a higher epoch than asked (its own file was ahead).
	e.published, e.pubIndex = nil, 0
	pub := State{Epoch: ep, Master: e.cfg.Node, InSync: []int64{e.cfg.Node}}
	if st, idx, err := e.readState(ctx); err == nil && st != nil {
		octx, cancel := e.op(ctx)
		if ok, _ := e.c.CAS(octx, e.sk, encode(pub), idx); ok {
			if kv, ok2, _ := e.c.Get(octx, e.sk); ok2 {
				e.published, e.pubIndex = &pub, kv.ModifyIndex
			}
		}
		cancel()
	}
	octx, cancel = e.op(ctx)
	_, _ = e.c.Acquire(octx, e.lk, e.sess, encode(Leader{Node: e.cfg.Node, Addr: e.cfg.Addr, HAAddr: e.n.HAAddr(), Epoch: ep, Since: start}))
	cancel()
	e.leaseFenced.Store(false)
	e.stMu.Lock()
	e.st.Epoch, e.st.InSync, e.st.Holder, e.st.HolderAddr = ep, pub.InSync, e.cfg.Node, e.cfg.Addr
	e.st.Promotions++
	e.st.Master = true
	e.st.LastPromoteMs = took.Milliseconds()
	e.stMu.Unlock()
	e.log.WithFields(logrus.Fields{"epoch": ep, "took": took.String()}).Warn("took over as master")
}

// advertise keeps this slave's candidacy (epoch, log end) current under its session: the
// slaves eligible for a free lock compare candidacies so that the one furthest ahead takes
// over. Written only when it changed (a replicating slave's log end moves; the write rate
// is at most one per step).
func (e *Elector) advertise(ctx context.Context) {
	c := Candidate{Node: e.cfg.Node, Epoch: e.n.Epoch(), MaxOffset: e.n.MaxOffset()}
	if e.cand != nil && *e.cand == c && e.candSess == e.sess {
		return
	}
	octx, cancel := e.op(ctx)
	ok, err := e.c.Acquire(octx, CandidateKey(e.cfg.Cluster, e.cfg.BrokerName, e.cfg.Node), e.sess, encode(c))
	cancel()
	if err != nil || !ok {
		e.cand = nil
		return
	}
	e.cand, e.candSess = &c, e.sess
}

// withdraw removes this node's candidacy (it became master).
func (e *Elector) withdraw(ctx context.Context) {
	octx, cancel := e.op(ctx)
	_ = e.c.Delete(octx, CandidateKey(e.cfg.Cluster, e.cfg.BrokerName, e.cfg.Node))
	cancel()
	e.cand = nil
}

// deferTo reports whether this slave should leave a free lock to another live candidate:
// one eligible under st that is further ahead (later epoch, longer log, lower id), or any
// eligible one when this node takes over uncleanly. While another eligible candidate is alive
// it also waits PollInterval after first seeing the lock free, so that every candidacy shows
// the log end it had when the master stopped. Without candidacies (none alive but its own)
// it does not wait.
func (e *Elector) deferTo(ctx context.Context, st *State, clean bool) (int64, bool) {
	octx, cancel := e.op(ctx)
	list, err := e.c.List(octx, CandidatePrefix(e.cfg.Cluster, e.cfg.BrokerName))
	cancel()
	if err != nil {
		return 0, true // decide with the candidacies in view, next round
	}
	me := Candidate{Node: e.cfg.Node, Epoch: e.n.Epoch(), MaxOffset: e.n.MaxOffset()}
	rivals := false
	for _, kv := range list {
		c, err := decode[Candidate](kv.Value)
		if err != nil || c == nil || c.Node == e.cfg.Node || kv.Session == "" || !st.Eligible(c.Node, false) {
			continue
		}
		if !clean || c.ahead(me) {
			return c.Node, true
		}
		rivals = true
	}
	if rivals && e.now().Sub(e.freeSince) < e.cfg.PollInterval {
		return 0, true
	}
	return 0, false
}

// giveUp undoes a takeover that cannot complete: the in-sync set of before comes back (with
// the bumped epoch, never reused), the lock is released and the broker stays a slave.
func (e *Elector) giveUp(ctx context.Context, prev *State, bumped int64, cause error) {
	e.log.WithError(cause).Error("takeover failed; releasing the lock")
	if prev != nil && bumped > 0 {
		if _, idx, err := e.readState(ctx); err == nil {
			restored := *prev
			restored.Epoch, restored.Handover = bumped, 0
			octx, cancel := e.op(ctx)
			_, _ = e.c.CAS(octx, e.sk, encode(restored), idx)
			cancel()
		}
	}
	octx, cancel := e.op(ctx)
	_, _ = e.c.Release(octx, e.lk, e.sess)
	cancel()
	if err := e.n.Demote(ctx); err != nil {
		e.log.WithError(err).Error("demote after a failed takeover failed")
	}
}

// stepDown turns a master that lost the lock into a slave.
func (e *Elector) stepDown(ctx context.Context, why string) {
	e.n.FenceWrites(why)
	e.log.WithField("reason", why).Warn("stepping down")
	if err := e.n.Demote(ctx); err != nil {
		e.log.WithError(err).Error("demote failed")
		return
	}
	e.leaseFenced.Store(false)
	e.published, e.pubIndex = nil, 0
	e.stMu.Lock()
	e.st.Demotions++
	e.st.Master = false
	e.stMu.Unlock()
}

// publish writes the in-sync set when it changed, with compare-and-set on the index the
// master last wrote: losing it to a higher epoch means another node took over.
func (e *Elector) publish(ctx context.Context) {
	inSync := append([]int64{e.cfg.Node}, e.n.InSync()...)
	slices.Sort(inSync)
	inSync = slices.Compact(inSync)
	ep := e.n.Epoch()
	if e.published != nil && e.published.Epoch == ep && slices.Equal(e.published.InSync, inSync) && e.published.Handover == 0 {
		return
	}
	st, idx, err := e.readState(ctx)
	if err != nil {
		e.note("state not read", err)
		return
	}
	if st != nil && (st.Epoch > ep || (st.Master != e.cfg.Node && st.Epoch >= ep)) {
		e.stepDown(ctx, fmt.Sprintf("epoch %d published by node %d", st.Epoch, st.Master))
		return
	}
	pub := State{Epoch: ep, Master: e.cfg.Node, InSync: inSync}
	octx, cancel := e.op(ctx)
	defer cancel()
	won, err := e.c.CAS(octx, e.sk, encode(pub), idx)
	if err != nil || !won {
		return // read again next round
	}
	if kv, ok, err := e.c.Get(octx, e.sk); err == nil && ok {
		e.published, e.pubIndex = &pub, kv.ModifyIndex
	}
	e.stMu.Lock()
	e.st.Epoch, e.st.InSync = ep, inSync
	e.stMu.Unlock()
	e.log.WithFields(logrus.Fields{"epoch": ep, "inSync": inSync}).Info("published in-sync set")
}

// switchover runs a pending graceful switchover request on the master: fence writes, wait
// until the chosen slave holds everything, name it the only eligible node, step down and
// release the lock.
func (e *Elector) switchover(ctx context.Context) {
	octx, cancel := e.op(ctx)
	kv, ok, err := e.c.Get(octx, e.swk)
	cancel()
	if err != nil || !ok {
		return
	}
	req, _ := decode[Switchover](kv.Value)
	del := func() {
		octx, cancel := e.op(ctx)
		_ = e.c.Delete(octx, e.swk)
		cancel()
	}
	if req == nil || req.To == e.cfg.Node {
		del()
		return
	}
	target := req.To
	if target == 0 {
		if in := e.n.InSync(); len(in) > 0 {
			target = in[0]
		}
	}
	if target == 0 || !slices.Contains(e.n.InSync(), target) {
		e.log.WithField("to", req.To).Error("switchover refused: no such in-sync slave")
		del()
		return
	}
	log := e.log.WithField("to", target)
	log.Warn("switchover: fencing writes")
	e.n.FenceWrites("switchover in progress")
	deadline := e.now().Add(e.cfg.SwitchoverTimeout)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !e.n.CaughtUp(target) {
		if !e.now().Before(deadline) || ctx.Err() != nil {
			log.Error("switchover abandoned: the slave did not catch up in time")
			e.n.UnfenceWrites()
			del()
			return
		}
		<-t.C
	}
	st, idx, err := e.readState(ctx)
	if err != nil || st == nil {
		e.n.UnfenceWrites()
		del()
		return
	}
	ho := *st
	ho.Handover = target
	octx, cancel = e.op(ctx)
	won, err := e.c.CAS(octx, e.sk, encode(ho), idx)
	cancel()
	if err != nil || !won {
		e.n.UnfenceWrites()
		return // retried next round
	}
	del()
	e.stepDown(ctx, "switchover")
	octx, cancel = e.op(ctx)
	_, _ = e.c.Release(octx, e.lk, e.sess)
	cancel()
	log.Warn("switchover: lock handed over")
}

// passNote is note for renew (its own rate limit: renew runs beside Step).
func (e *Elector) passNote(msg string, err error) {
	now := e.now()
	if now.Sub(e.lastPassNot) < time.Second {
		return
	}
	e.lastPassNot = now
	e.log.WithError(err).Info(msg)
}

// note logs a recurring condition at most once a second.
func (e *Elector) note(msg string, err error) {
	now := e.now()
	if now.Sub(e.lastNote) < time.Second {
		return
	}
	e.lastNote = now
	l := e.log
	if err != nil {
		l = l.WithError(err)
	}
	l.Info(msg)
}
