package failover

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeNode is a broker in memory: a log length, an epoch, a role.
type fakeNode struct {
	mu        sync.Mutex
	id        int64
	master    bool
	epoch     int64
	offset    int64
	fenced    bool
	inSync    []int64
	caughtUp  bool
	follow    string
	failNext  bool
	unhealthy bool
}

func (n *fakeNode) IsMaster() bool { n.mu.Lock(); defer n.mu.Unlock(); return n.master }
func (n *fakeNode) Epoch() int64   { n.mu.Lock(); defer n.mu.Unlock(); return n.epoch }
func (n *fakeNode) MaxOffset() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.offset
}
func (n *fakeNode) setInSync(ids ...int64) {
	n.mu.Lock()
	n.inSync = ids
	n.mu.Unlock()
}
func (n *fakeNode) setPos(epoch, offset int64) {
	n.mu.Lock()
	n.epoch, n.offset = epoch, offset
	n.mu.Unlock()
}
func (n *fakeNode) Promote(_ context.Context, e int64) (int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.failNext {
		n.failNext = false
		return 0, context.DeadlineExceeded
	}
	n.master, n.fenced = true, false
	n.epoch = max(e, n.epoch+1)
	return n.epoch, nil
}
func (n *fakeNode) Demote(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.master, n.fenced = false, true
	return nil
}
func (n *fakeNode) FenceWrites(string) { n.mu.Lock(); n.fenced = true; n.mu.Unlock() }
func (n *fakeNode) UnfenceWrites()     { n.mu.Lock(); n.fenced = false; n.mu.Unlock() }
func (n *fakeNode) HAAddr() string     { return "ha-" + itoa(n.id) }
func (n *fakeNode) InSync() []int64    { n.mu.Lock(); defer n.mu.Unlock(); return slices.Clone(n.inSync) }
func (n *fakeNode) CaughtUp(int64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.caughtUp
}
func (n *fakeNode) Healthy() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.unhealthy {
		return errors.New("store failed")
	}
	return nil
}
func (n *fakeNode) Follow(a, _ string) { n.mu.Lock(); n.follow = a; n.mu.Unlock() }
func (n *fakeNode) isFenced() bool     { n.mu.Lock(); defer n.mu.Unlock(); return n.fenced }

type group struct {
	clk   *fakeClock
	coord *MemCoordinator
	nodes []*fakeNode
	els   []*Elector
}

func newGroup(t *testing.T, n int, mod func(*Config)) *group {
	g := &group{clk: &fakeClock{t: time.Unix(1000, 0)}}
	g.coord = NewMemCoordinator(g.clk.now)
	for i := 1; i <= n; i++ {
		cfg := DefaultConfig()
		cfg.Cluster, cfg.BrokerName, cfg.Node, cfg.Addr = "c", "b", int64(i), "addr-"+itoa(int64(i))
		cfg.Now = g.clk.now
		if mod != nil {
			mod(&cfg)
		}
		node := &fakeNode{id: int64(i)}
		e, err := New(cfg, g.coord, node)
		require.NoError(t, err)
		g.nodes = append(g.nodes, node)
		g.els = append(g.els, e)
	}
	return g
}

func (g *group) step(skip ...int) {
	for i, e := range g.els {
		if !slices.Contains(skip, i) {
			e.Step(context.Background())
			e.Guard()
		}
	}
}

func (g *group) masters() []int {
	var out []int
	for i, n := range g.nodes {
		if n.IsMaster() {
			out = append(out, i)
		}
	}
	return out
}

func (g *group) state(t *testing.T) *State {
	kv, ok, err := g.coord.Get(context.Background(), StateKey("c", "b"))
	require.NoError(t, err)
	require.True(t, ok)
	st, err := decode[State](kv.Value)
	require.NoError(t, err)
	return st
}

func TestBootstrapElectsOneMaster(t *testing.T) {
	g := newGroup(t, 3, nil)
	g.step()
	require.Equal(t, []int{0}, g.masters())
	st := g.state(t)
	require.Equal(t, int64(1), st.Epoch)
	require.Equal(t, []int64{1}, st.InSync)
	g.step()
	require.Equal(t, []int{0}, g.masters(), "never two masters")
	require.Equal(t, "ha-1", g.nodes[1].follow, "slaves follow the lock holder")
	s := g.els[1].Status()
	require.Equal(t, int64(1), s.Holder)
}

func TestFailoverOnlyToInSyncSlave(t *testing.T) {
	g := newGroup(t, 3, nil)
	g.step()
	g.nodes[0].setInSync(3) // node 3 in sync, node 2 behind
	g.step()
	require.Equal(t, []int64{1, 3}, g.state(t).InSync)

	// Node 1 dies: nothing passes its lease any more.
	for i := 0; i < 12; i++ {
		g.clk.add(250 * time.Millisecond)
		g.step(0)
	}
	require.Equal(t, []int{0, 2}, g.masters(), "node 3 (in sync) took over; node 2 did not")
	st := g.state(t)
	require.Equal(t, int64(3), st.Master)
	require.Equal(t, int64(2), st.Epoch)
	require.Equal(t, []int64{3}, st.InSync)

	// The old master comes back (its broker process restarted as a slave).
	g.nodes[0].mu.Lock()
	g.nodes[0].master = false
	g.nodes[0].mu.Unlock()
	g.step()
	require.Equal(t, []int{2}, g.masters())
	require.Equal(t, "ha-3", g.nodes[0].follow)
}

func TestUncleanTakeoverIsOptIn(t *testing.T) {
	g := newGroup(t, 2, func(c *Config) { c.Unclean = c.Node == 2 })
	g.step()
	require.Equal(t, []int{0}, g.masters())
	for i := 0; i < 12; i++ {
		g.clk.add(250 * time.Millisecond)
		g.step(0)
	}
	require.Equal(t, []int{0, 1}, g.masters(), "fake node 1 still thinks it is master (dead)")
	require.Equal(t, int64(2), g.state(t).Master)
}

func TestMasterCutOffFencesBeforeLeaseEnds(t *testing.T) {
	g := newGroup(t, 2, nil)
	g.step()
	g.nodes[0].setInSync(2)
	g.step()
	passed := g.clk.now()
	g.coord.CutOff(g.els[0].chk, true)
	var fencedAt time.Time
	for i := 0; i < 40; i++ {
		g.clk.add(50 * time.Millisecond)
		g.step()
		if fencedAt.IsZero() && g.nodes[0].isFenced() {
			fencedAt = g.clk.now()
		}
		if len(g.masters()) == 2 && g.masters()[1] == 1 {
			// The slave promoted: the old master must have been fenced by then.
			require.False(t, fencedAt.IsZero(), "old master still accepting writes when the slave took over")
			break
		}
	}
	require.False(t, fencedAt.IsZero())
	cfg := DefaultConfig()
	require.LessOrEqual(t, fencedAt.Sub(passed), cfg.LeaseTTL-cfg.SafetyMargin+50*time.Millisecond)
	require.Contains(t, g.masters(), 1)

	// Connectivity returns: the old master sees the lock is gone and steps down.
	g.coord.CutOff(g.els[0].chk, false)
	g.step()
	require.Equal(t, []int{1}, g.masters())
}

func TestShortHiccupUnfences(t *testing.T) {
	g := newGroup(t, 2, nil)
	g.step()
	g.coord.CutOff(g.els[0].chk, true)
	g.clk.add(1500 * time.Millisecond)
	g.els[0].Guard()
	require.True(t, g.nodes[0].isFenced())
	g.coord.CutOff(g.els[0].chk, false)
	g.step()
	require.False(t, g.nodes[0].isFenced(), "renewed before the TTL: writes again")
	require.Equal(t, []int{0}, g.masters())
}

func TestSwitchover(t *testing.T) {
	g := newGroup(t, 3, nil)
	g.step()
	g.nodes[0].mu.Lock()
	g.nodes[0].inSync, g.nodes[0].caughtUp = []int64{2, 3}, true
	g.nodes[0].mu.Unlock()
	g.step()
	ctx := context.Background()
	ok, err := g.coord.CAS(ctx, SwitchoverKey("c", "b"), encode(Switchover{To: 3}), 0)
	require.NoError(t, err)
	require.True(t, ok)
	g.step()
	g.step()
	require.Equal(t, []int{2}, g.masters())
	st := g.state(t)
	require.Equal(t, int64(3), st.Master)
	require.Zero(t, st.Handover)
	_, pending, _ := g.coord.Get(ctx, SwitchoverKey("c", "b"))
	require.False(t, pending)
}

func TestPromotionFailureReleases(t *testing.T) {
	g := newGroup(t, 2, nil)
	g.nodes[0].failNext = true
	g.step(1)
	require.Empty(t, g.masters())
	g.step()
	require.Len(t, g.masters(), 1)
	st := g.state(t)
	require.Greater(t, st.Epoch, int64(1), "a failed attempt's epoch is never reused")
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.Cluster, c.BrokerName, c.Node = "c", "b", 1
	require.NoError(t, c.Validate())
	bad := c
	bad.SafetyMargin = c.LeaseTTL
	require.ErrorIs(t, bad.Validate(), ErrInvalidConfig)
	bad = c
	bad.Node = 0
	require.ErrorContains(t, bad.Validate(), "Node")
	bad = c
	bad.PassInterval = c.LeaseTTL
	require.ErrorContains(t, bad.Validate(), "PassInterval")
}

func TestSwitchoverHelper(t *testing.T) {
	g := newGroup(t, 2, nil)
	g.step()
	g.nodes[0].mu.Lock()
	g.nodes[0].inSync, g.nodes[0].caughtUp = []int64{2}, true
	g.nodes[0].mu.Unlock()
	g.step()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				g.step()
			}
		}
	}()
	res, err := RequestSwitchover(ctx, g.coord, "c", "b", 0, time.Millisecond, time.Now)
	close(stop)
	<-done
	require.NoError(t, err)
	require.Equal(t, int64(1), res.From)
	require.Equal(t, int64(2), res.To)
	require.Greater(t, res.ToEpoch, res.FromEpoch)
	_, err = RequestSwitchover(ctx, g.coord, "c", "b", 2, time.Millisecond, time.Now)
	require.ErrorIs(t, err, ErrNoCandidate)
}

// killMaster lets node i's lease run out (nothing passes it) while the others step.
func (g *group) runWithout(i, rounds int) {
	for r := 0; r < rounds; r++ {
		g.clk.add(250 * time.Millisecond)
		g.step(i)
	}
}

func TestFurthestAheadSlaveTakesOver(t *testing.T) {
	g := newGroup(t, 3, nil)
	g.step()
	require.Equal(t, []int{0}, g.masters())
	g.nodes[0].setInSync(2, 3)
	g.nodes[1].setPos(1, 900)  // node 2: behind (acknowledged less)
	g.nodes[2].setPos(1, 1000) // node 3: holds everything
	g.step()
	require.Equal(t, []int64{1, 2, 3}, g.state(t).InSync)

	g.runWithout(0, 12)
	require.Equal(t, []int{0, 2}, g.masters(), "node 3, furthest ahead, took over; node 2 deferred")
	require.Equal(t, int64(3), g.state(t).Master)
	_, ok, err := g.coord.Get(context.Background(), CandidateKey("c", "b", 3))
	require.NoError(t, err)
	require.False(t, ok, "the new master withdrew its candidacy")
}

func TestEqualCandidatesLowerIDWins(t *testing.T) {
	g := newGroup(t, 3, nil)
	g.step()
	g.nodes[0].setInSync(2, 3)
	g.nodes[1].setPos(1, 500)
	g.nodes[2].setPos(1, 500)
	g.step()
	g.runWithout(0, 12)
	require.Equal(t, []int{0, 1}, g.masters())
}

func TestLaterEpochBeatsLongerLog(t *testing.T) {
	require.True(t, Candidate{Node: 3, Epoch: 4, MaxOffset: 10}.ahead(Candidate{Node: 2, Epoch: 3, MaxOffset: 99}))
	require.False(t, Candidate{Node: 3, Epoch: 3, MaxOffset: 10}.ahead(Candidate{Node: 2, Epoch: 3, MaxOffset: 10}))
}

func TestDeadBetterCandidateDoesNotBlock(t *testing.T) {
	g := newGroup(t, 3, nil)
	g.step()
	g.nodes[0].setInSync(2, 3)
	g.nodes[1].setPos(1, 400)
	g.nodes[2].setPos(1, 1000)
	g.step()
	// Master and the furthest slave die together: node 2 takes over once node 3's lease ended.
	for r := 0; r < 16; r++ {
		g.clk.add(250 * time.Millisecond)
		g.step(0, 2)
	}
	require.Contains(t, g.masters(), 1)
	require.Equal(t, int64(2), g.state(t).Master)
}

func TestUncleanDefersToInSyncCandidate(t *testing.T) {
	g := newGroup(t, 3, func(c *Config) { c.Unclean = true })
	g.step()
	g.nodes[0].setInSync(3)
	g.nodes[1].setPos(1, 2000) // out of sync (the set says so), however long its log
	g.nodes[2].setPos(1, 1000)
	g.step()
	g.runWithout(0, 12)
	require.Equal(t, int64(3), g.state(t).Master, "the in-sync candidate goes first")
}

func TestUnhealthyMasterLosesLeadership(t *testing.T) {
	g := newGroup(t, 2, nil)
	g.step()
	g.nodes[0].setInSync(2)
	g.step()
	g.nodes[0].mu.Lock()
	g.nodes[0].unhealthy = true // e.g. its disk failed: it still runs and steps
	g.nodes[0].mu.Unlock()
	for i := 0; i < 12; i++ {
		g.clk.add(250 * time.Millisecond)
		g.step()
	}
	require.True(t, g.nodes[0].isFenced(), "the unhealthy master stopped accepting writes")
	require.Contains(t, g.masters(), 1, "the healthy slave took over")
	require.Equal(t, int64(2), g.state(t).Master)
}
