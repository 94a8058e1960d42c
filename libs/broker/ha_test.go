package broker

import (
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// stallProxy forwards TCP connections to target and can stall them (bytes are held, not
// dropped) to simulate a stuck link.
type stallProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	closed atomic.Bool
	conns  []net.Conn
}

func startStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &stallProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *stallProxy) addr() string { return p.ln.Addr().String() }

func (p *stallProxy) setPaused(v bool) {
	p.mu.Lock()
	p.paused = v
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *stallProxy) close() {
	p.closed.Store(true)
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.paused = false
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *stallProxy) accept() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *stallProxy) pipe(src, dst net.Conn) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for p.paused && !p.closed.Load() {
				p.cond.Wait()
			}
			p.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func syncMasterConfig(t testing.TB) Config {
	cfg := testConfig(t)
	cfg.BrokerRole = RoleSyncMaster
	cfg.SlaveTimeout = 700 * time.Millisecond
	return cfg
}

func slaveConfig(t testing.TB, haMaster string) Config {
	cfg := testConfig(t)
	cfg.BrokerRole = RoleSlave
	cfg.BrokerID = 1
	cfg.HAMasterAddress = haMaster
	return cfg
}

func TestSyncMasterReplication(t *testing.T) {
	m := startBroker(t, syncMasterConfig(t))
	c := newTestClient(t)

	// No slave: stored on the master only, SLAVE_NOT_AVAILABLE at once.
	resp := send(t, c, m.Addr(), "S", 0, "", "alone")
	require.Equal(t, remoting.SlaveNotAvailable, resp.Code, resp.Remark)
	require.Equal(t, "true", resp.Ext("stored"))
	require.Equal(t, "1", resp.Ext("replicas"))
	require.NotEmpty(t, resp.Ext("msgId"))

	proxy := startStallProxy(t, m.HAAddr())
	s := startBroker(t, slaveConfig(t, proxy.addr()))
	require.Eventually(t, func() bool { return m.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)

	// With the slave in sync: SEND_OK once it acknowledged, two copies.
	resp = send(t, c, m.Addr(), "S", 0, "", "replicated")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "2", resp.Ext("replicas"))
	require.GreaterOrEqual(t, s.store.MaxOffset(), m.store.MaxOffset())

	// The slave serves what it replicated.
	require.Eventually(t, func() bool { return s.store.QueueMaxOffset("S", 0) == 2 }, 5*time.Second, 5*time.Millisecond)
	invoke(t, c, s.Addr(), remoting.HeartBeat, nil, heartbeatBody("c1", "g", map[string]string{"S": "*"}))
	pr := invoke(t, c, s.Addr(), remoting.PullMessage, pullExt("g", "S", 0, 0, 2, 1000), nil)
	require.Equal(t, remoting.Success, pr.Code, pr.Remark)
	require.Len(t, decodeRecords(t, pr.Body), 2)
	// ... and never beyond: "not yet", the requested offset kept, the master suggested.
	pr = invoke(t, c, s.Addr(), remoting.PullMessage, pullExt("g", "S", 0, 7, 2, 100), nil)
	require.Equal(t, remoting.PullRetryImmediately, pr.Code, pr.Remark)
	require.Equal(t, "7", pr.Ext("nextBeginOffset"))
	require.Equal(t, "0", pr.Ext("suggestWhichBrokerId"))

	// A stalled link: the slave is still counted in sync, the deadline passes.
	proxy.setPaused(true)
	start := time.Now()
	resp = send(t, c, m.Addr(), "S", 0, "", "stalled")
	require.Equal(t, remoting.FlushSlaveTimeout, resp.Code, resp.Remark)
	require.Equal(t, "1", resp.Ext("replicas"))
	require.GreaterOrEqual(t, time.Since(start), 600*time.Millisecond)
	proxy.setPaused(false)

	// The link heals: the slave catches up and sends succeed again.
	require.Eventually(t, func() bool { return s.store.MaxOffset() == m.store.MaxOffset() }, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		return send(t, c, m.Addr(), "S", 0, "", "healed").Code == remoting.Success
	}, 10*time.Second, 50*time.Millisecond)

	st := m.Status()
	require.NotNil(t, st.HAMaster)
	require.Len(t, st.HAMaster.Slaves, 1)
	require.NotNil(t, s.Status().HASlave)
}

func TestSyncMasterStrictMode(t *testing.T) {
	cfg := syncMasterConfig(t)
	cfg.MinInSyncReplicas = 2
	m := startBroker(t, cfg)
	c := newTestClient(t)
	send(t, c, m.Addr(), "S", 0, "", "warm-up") // creates the topic; refused too
	before := m.store.MaxOffset()
	resp := send(t, c, m.Addr(), "S", 0, "", "refused")
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Contains(t, resp.Remark, "in-sync replicas not enough")
	require.Equal(t, before, m.store.MaxOffset(), "refused message must not be stored")

	s := startBroker(t, slaveConfig(t, m.HAAddr()))
	require.Eventually(t, func() bool { return m.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
	resp = send(t, c, m.Addr(), "S", 0, "", "accepted")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	_ = s
}

// TestSlaveDiscoversMasterFromRegistration: without haMasterAddress the slave takes the master's
// HA address from the REGISTER_BROKER answer.
func TestSlaveDiscoversMasterFromRegistration(t *testing.T) {
	ns := startNSStub(t)
	mcfg := syncMasterConfig(t)
	mcfg.NamesrvAddr = ns.addr()
	m := startBroker(t, mcfg)
	require.Eventually(t, func() bool { r, _ := ns.counts(); return r >= 1 }, 10*time.Second, 5*time.Millisecond)
	scfg := slaveConfig(t, "")
	scfg.NamesrvAddr = ns.addr()
	s := startBroker(t, scfg)
	require.Eventually(t, func() bool { return m.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, m.AdvertisedAddr(), s.Status().MasterAddr)
	c := newTestClient(t)
	resp := send(t, c, m.Addr(), "D", 0, "", "x")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	// Registration carries the epoch; clean shutdown unregisters.
	ns.mu.Lock()
	require.NotEmpty(t, ns.epochs)
	require.NotEqual(t, "", ns.epochs[0])
	ns.mu.Unlock()
	require.NoError(t, s.Shutdown(context.Background()))
	_, unregs := ns.counts()
	require.Equal(t, 1, unregs)
	ns.mu.Lock()
	_, still := ns.addrs["broker-a"][1]
	ns.mu.Unlock()
	require.False(t, still)
}

func TestRegistrationOnTopicChange(t *testing.T) {
	ns := startNSStub(t)
	cfg := testConfig(t)
	cfg.NamesrvAddr = ns.addr() + ";" + "127.0.0.1:1" // a dead name server must not block the live one
	b := startBroker(t, cfg)
	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", "TBW102") }, 10*time.Second, 5*time.Millisecond)
	c := newTestClient(t)
	resp := invoke(t, c, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "NewT", "readQueueNums": "3", "writeQueueNums": "3", "perm": "6"}, nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", "NewT") }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, remoting.Success, send(t, c, b.Addr(), "AutoT", 0, "", "x").Code)
	require.Eventually(t, func() bool { return ns.hasTopic("broker-a", "AutoT") }, 10*time.Second, 5*time.Millisecond)
	ns.mu.Lock()
	addr := ns.addrs["broker-a"][0]
	ns.mu.Unlock()
	require.Equal(t, "127.0.0.1:"+strconv.Itoa(b.ln.Addr().(*net.TCPAddr).Port), addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, b.Shutdown(ctx))
	_, unregs := ns.counts()
	require.Equal(t, 1, unregs)
}

// TestSlaveLongPollWakesOnReplication: a pull held on a slave is answered as soon as the
// replicated message is dispatched there.
func TestSlaveLongPollWakesOnReplication(t *testing.T) {
	m := startBroker(t, testConfig(t))
	s := startBroker(t, slaveConfig(t, m.HAAddr()))
	c := newTestClient(t)
	require.Equal(t, remoting.Success, send(t, c, m.Addr(), "W", 0, "", "one").Code)
	require.Eventually(t, func() bool { return s.store.QueueMaxOffset("W", 0) == 1 }, 10*time.Second, 5*time.Millisecond)
	invoke(t, c, s.Addr(), remoting.HeartBeat, nil, heartbeatBody("c1", "g", map[string]string{"W": "*"}))

	done := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := c.Invoke(ctx, s.Addr(), remoting.NewRequest(remoting.PullMessage, pullExt("g", "W", 0, 1, 2, 20000), nil))
		if err != nil {
			resp = nil
		}
		done <- resp
	}()
	require.Eventually(t, func() bool { return s.holds.heldCount() == 1 }, 5*time.Second, 2*time.Millisecond)
	require.Equal(t, remoting.Success, send(t, newTestClient(t), m.Addr(), "W", 0, "", "two").Code)
	select {
	case resp := <-done:
		require.NotNil(t, resp)
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		require.Equal(t, "two", string(decodeRecords(t, resp.Body)[0].Body))
	case <-time.After(10 * time.Second):
		t.Fatal("held pull on the slave was not woken by replication")
	}

	// The master gone, the slave keeps serving what it has and says "not yet" beyond it.
	require.NoError(t, m.Shutdown(context.Background()))
	resp := invoke(t, c, s.Addr(), remoting.PullMessage, pullExt("g", "W", 0, 0, 2, 100), nil)
	require.Equal(t, remoting.Success, resp.Code)
	require.Len(t, decodeRecords(t, resp.Body), 2)
	resp = invoke(t, c, s.Addr(), remoting.PullMessage, pullExt("g", "W", 0, 5, 2, 100), nil)
	require.Equal(t, remoting.PullRetryImmediately, resp.Code)
	require.Equal(t, "5", resp.Ext("nextBeginOffset"))
	require.NoError(t, s.Healthy())
}

// TestShutdownAnswersPendingSyncSends: a send waiting for a stalled slave is answered
// (FLUSH_SLAVE_TIMEOUT, stored) by a clean shutdown instead of losing its connection.
func TestShutdownAnswersPendingSyncSends(t *testing.T) {
	cfg := syncMasterConfig(t)
	cfg.SlaveTimeout = 20 * time.Second
	m := startBroker(t, cfg)
	proxy := startStallProxy(t, m.HAAddr())
	startBroker(t, slaveConfig(t, proxy.addr()))
	require.Eventually(t, func() bool { return m.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
	c := newTestClient(t)
	require.Equal(t, remoting.Success, send(t, c, m.Addr(), "SD", 0, "", "warm").Code)
	proxy.setPaused(true)
	done := make(chan *remoting.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, _ := c.Invoke(ctx, m.Addr(), remoting.NewRequest(remoting.SendMessage, sendExt("SD", 0, ""), []byte("pending")))
		done <- resp
	}()
	require.Eventually(t, func() bool { return m.view().master.Status().PendingWaiters == 1 }, 10*time.Second, 2*time.Millisecond)
	require.NoError(t, m.Shutdown(context.Background()))
	resp := <-done
	require.NotNil(t, resp, "the pending send got no answer")
	require.Equal(t, remoting.FlushSlaveTimeout, resp.Code, resp.Remark)
	require.Equal(t, "true", resp.Ext("stored"))
	proxy.setPaused(false)
}

// TestSlaveStartedBeforeMaster: a slave without haMasterAddress registers before its master
// exists and keeps asking until the name server knows the master's HA address.
func TestSlaveStartedBeforeMaster(t *testing.T) {
	ns := startNSStub(t)
	scfg := slaveConfig(t, "")
	scfg.NamesrvAddr = ns.addr()
	s := startBroker(t, scfg)
	require.Eventually(t, func() bool { r, _ := ns.counts(); return r >= 1 }, 10*time.Second, 5*time.Millisecond)
	mcfg := syncMasterConfig(t)
	mcfg.NamesrvAddr = ns.addr()
	m := startBroker(t, mcfg)
	require.Eventually(t, func() bool { return m.view().master.InSyncCount() == 2 }, 20*time.Second, 5*time.Millisecond)
	require.Equal(t, m.AdvertisedAddr(), s.Status().MasterAddr)
}
