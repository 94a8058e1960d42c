package attacktest

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// Transport attacks on the master's remoting port: bytes a stranger sends before any request
// is understood. The master runs with a small byte budget and a short frame deadline so that
// the bounds show within seconds.
const (
	transportBytesInFlight = 96 << 20
	transportFrameTimeout  = 3 * time.Second
	transportMaxConns      = 32
	mib                    = 1 << 20
)

func mibs(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/mib) }

// remotingMetric reads one series of a broker's rmqha_broker_remoting_* metrics.
func remotingMetric(t *testing.T, hostport, series string) float64 {
	t.Helper()
	v, err := Metric(hostport, "rmqha_broker_remoting_"+series)
	require.NoError(t, err)
	return v
}

// rss reads a process's VmRSS, failing the test on error.
func rss(t *testing.T, p *harness.Process) int64 {
	t.Helper()
	v, err := RSS(p)
	require.NoError(t, err)
	return v
}

// sendFrame encodes one SEND_MESSAGE request (topic AttackFlood) with body and opaque.
func sendFrame(t *testing.T, opaque int32, body []byte) []byte {
	t.Helper()
	req := remoting.NewRequest(remoting.SendMessage, sendExt("AttackFlood", "-1", props("UNIQ_KEY", "flood-"+strconv.Itoa(int(opaque)))), body)
	req.Opaque = opaque
	b, err := remoting.EncodeFrame(nil, req)
	require.NoError(t, err)
	return b
}

// closedWithin reads from c until the peer closes it (or sends something and then closes),
// up to limit; it reports how long that took and whether the close came.
func closedWithin(c net.Conn, limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return time.Since(start), false
		}
		return time.Since(start), true
	}
}

// waitRSSBelow polls p's RSS until it is at most limit (or deadline) and returns the last
// value and how long it took.
func waitRSSBelow(t *testing.T, p *harness.Process, limit int64, deadline time.Duration) (int64, time.Duration) {
	t.Helper()
	start := time.Now()
	var last int64
	_ = harness.WaitFor(deadline, func() error {
		last = rss(t, p)
		if last > limit {
			return fmt.Errorf("RSS %s above %s", mibs(last), mibs(limit))
		}
		return nil
	})
	return last, time.Since(start)
}

// TestTransport plays the attacks that need nothing but the remoting port against one master
// (serverMaxBytesInFlight 96 MiB, serverFrameTimeoutMillis 3000, serverMaxConnections 32; the
// cases before the connection flood stay below that). Each case ends with the group's
// invariants.
func TestTransport(t *testing.T) {
	f := Start(t, Config{
		ExtraMaster: []string{
			"serverMaxBytesInFlight=" + strconv.Itoa(transportBytesInFlight),
			"serverFrameTimeoutMillis=" + strconv.FormatInt(transportFrameTimeout.Milliseconds(), 10),
			"serverMaxConnections=" + strconv.Itoa(transportMaxConns),
		},
		// Once an attack is over (the memory of held frames is returned within seconds).
		RSSBudget: 96 << 20,
	})
	f.SendOK(t, topic, []byte("before the transport attacks"))
	base := rss(t, f.Master)
	t.Logf("master RSS before the attacks %s", mibs(base))

	t.Run("HeldFrames", func(t *testing.T) { heldFrames(t, f, base) })
	t.Run("OversizedLength", func(t *testing.T) { oversizedLength(t, f) })
	t.Run("Slowloris", func(t *testing.T) { slowloris(t, f) })
	t.Run("UnreadAnswers", func(t *testing.T) { unreadAnswers(t, f) })
	t.Run("RequestFlood", func(t *testing.T) { requestFlood(t, f) })
	t.Run("ConnectionFlood", func(t *testing.T) { connectionFlood(t, f) })
}

// 12 connections each announce a frame of almost 16 MiB (the largest the broker takes), send
// all of it but the last 64 KiB, and hold: 192 MiB announced, 191 MiB sent. The byte budget
// lets at most 96 MiB be held in read buffers (the rest is read and discarded, answered
// SYSTEM_BUSY if the frame ever completed); the frame deadline closes every connection; the
// memory goes back to the operating system afterwards. Budget while held: the RSS before plus
// twice the byte budget (the live buffers plus, at most as much again, the garbage of the
// buffers they grew from, not yet collected); without the budget the 12 buffers alone would
// be 192 MiB. After the close: the RSS before plus 32 MiB.
func heldFrames(t *testing.T, f *Fixture, base int64) {
	const conns, frameLen, short = 12, 16<<20 - 64, 64 << 10
	timeoutsBefore := remotingMetric(t, f.MasterHTTP, "frame_timeouts_total")
	busyBefore := remotingMetric(t, f.MasterHTTP, `busy_total{reason="bytes_in_flight"}`)
	payload := make([]byte, frameLen-4-short) // after the length prefix
	cs := make([]net.Conn, conns)
	firstByte := make([]time.Time, conns)
	var wg sync.WaitGroup
	var sent sync.Map
	for i := range cs {
		c, err := net.DialTimeout("tcp", f.MasterAddr, 5*time.Second)
		require.NoError(t, err)
		defer c.Close()
		cs[i] = c
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			frame := sendFrame(t, int32(1000+i), make([]byte, 64))
			// The real header of a SEND_MESSAGE, with the length of a huge body.
			binary.BigEndian.PutUint32(frame, frameLen)
			_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
			firstByte[i] = time.Now()
			n1, err := c.Write(frame[:len(frame)-64])
			if err != nil {
				return
			}
			n2, _ := c.Write(payload[:len(payload)-(len(frame)-64-4)])
			sent.Store(i, n1+n2)
		}(i)
	}
	wg.Wait()
	var total int64
	sent.Range(func(_, v any) bool { total += int64(v.(int)); return true })
	held := remotingMetric(t, f.MasterHTTP, "bytes_in_flight")
	during := rss(t, f.Master)
	t.Logf("held frames: %d connections sent %s announcing %s; master holds %s in read buffers (budget %s), RSS %s (before %s)",
		conns, mibs(total), mibs(int64(conns)*frameLen), mibs(int64(held)), mibs(transportBytesInFlight), mibs(during), mibs(base))
	require.LessOrEqual(t, held, float64(transportBytesInFlight), "the byte budget holds")
	require.LessOrEqual(t, during, base+2*transportBytesInFlight, "RSS while the frames are held")

	var slowest, fastest time.Duration
	for i, c := range cs {
		_, closed := closedWithin(c, 30*time.Second)
		require.True(t, closed, "connection %d still open 30 s after its frame's first byte", i)
		d := time.Since(firstByte[i])
		if fastest == 0 || d < fastest {
			fastest = d
		}
		slowest = max(slowest, d)
	}
	timeouts := remotingMetric(t, f.MasterHTTP, "frame_timeouts_total") - timeoutsBefore
	busy := remotingMetric(t, f.MasterHTTP, `busy_total{reason="bytes_in_flight"}`) - busyBefore
	t.Logf("held frames: closed %v to %v after their first byte (serverFrameTimeoutMillis %v); frame timeouts +%v, SYSTEM_BUSY +%v",
		fastest.Round(time.Millisecond), slowest.Round(time.Millisecond), transportFrameTimeout, timeouts, busy)
	require.GreaterOrEqual(t, fastest, transportFrameTimeout-100*time.Millisecond, "closed at the deadline, not before")
	require.EqualValues(t, conns, timeouts, "every held connection closed by the frame deadline")
	require.Eventually(t, func() bool { return remotingMetric(t, f.MasterHTTP, "bytes_in_flight") == 0 }, 10*time.Second, 50*time.Millisecond)
	after, took := waitRSSBelow(t, f.Master, base+32<<20, 30*time.Second)
	t.Logf("held frames: master RSS %s %v after the close (before %s, while held %s)", mibs(after), took.Round(100*time.Millisecond), mibs(base), mibs(during))
	require.LessOrEqual(t, after, base+32<<20, "the memory comes back after the close")
	f.CheckInvariants(t)
}

// Length prefixes above the largest frame (16 MiB + 1, 256 MiB, 2 GiB - 1) and negative ones
// are refused at the prefix: the connection is closed and nothing is allocated for it (bytes in
// flight stay 0, RSS within 16 MiB of before), and frames_refused_total counts each.
func oversizedLength(t *testing.T, f *Fixture) {
	before := rss(t, f.Master)
	tooLarge0 := remotingMetric(t, f.MasterHTTP, `frames_refused_total{reason="too_large"}`)
	malformed0 := remotingMetric(t, f.MasterHTTP, `frames_refused_total{reason="malformed"}`)
	prefixes := []uint32{16<<20 + 1, 256 << 20, 0x7fffffff, 0xffffffff, 0x80000000}
	const each = 10
	var slowest time.Duration
	for _, p := range prefixes {
		for i := 0; i < each; i++ {
			c, err := net.DialTimeout("tcp", f.MasterAddr, 5*time.Second)
			require.NoError(t, err)
			frame := sendFrame(t, int32(i), []byte("x"))
			binary.BigEndian.PutUint32(frame, p)
			_, err = c.Write(frame)
			require.NoError(t, err)
			d, closed := closedWithin(c, 20*time.Second)
			_ = c.Close()
			require.True(t, closed, "prefix %#x: connection not closed", p)
			slowest = max(slowest, d)
		}
		require.Zero(t, remotingMetric(t, f.MasterHTTP, "bytes_in_flight"))
	}
	after := rss(t, f.Master)
	tooLarge := remotingMetric(t, f.MasterHTTP, `frames_refused_total{reason="too_large"}`) - tooLarge0
	malformed := remotingMetric(t, f.MasterHTTP, `frames_refused_total{reason="malformed"}`) - malformed0
	t.Logf("oversized length prefixes: %d connections closed at the prefix (slowest %v), counted too_large %v, malformed %v; master RSS %s -> %s",
		len(prefixes)*each, slowest.Round(time.Millisecond), tooLarge, malformed, mibs(before), mibs(after))
	require.EqualValues(t, 3*each, tooLarge)
	require.EqualValues(t, 2*each, malformed, "negative lengths")
	require.LessOrEqual(t, after, before+16<<20, "nothing allocated for announced lengths")
	require.True(t, f.Master.LogContains("frame too large"), "the refusal is logged")
	f.CheckInvariants(t)
}

// 24 connections each announce a 2 KiB frame and trickle it one byte every 250 ms (the whole
// frame would take over 8 minutes): every connection is closed at the frame deadline, however
// steadily its bytes arrive. Budget: RSS within 16 MiB of before.
func slowloris(t *testing.T, f *Fixture) {
	const conns, interval = 24, 250 * time.Millisecond
	before := rss(t, f.Master)
	timeoutsBefore := remotingMetric(t, f.MasterHTTP, "frame_timeouts_total")
	frame := sendFrame(t, 7, make([]byte, 2048))
	type result struct {
		d      time.Duration
		closed bool
		bytes  int
	}
	results := make([]result, conns)
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		c, err := net.DialTimeout("tcp", f.MasterAddr, 5*time.Second)
		require.NoError(t, err)
		defer c.Close()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			start := time.Now()
			n := 0
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for ; n < len(frame) && time.Since(start) < 30*time.Second; n++ {
				_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Write(frame[n : n+1]); err != nil {
					break
				}
				<-tick.C
			}
			// The write fails once the server closed (or the next read says so).
			_, closed := closedWithin(c, time.Second)
			results[i] = result{time.Since(start), closed, n}
		}(i)
	}
	wg.Wait()
	var fastest, slowest time.Duration
	var bytes int
	for i, r := range results {
		require.True(t, r.closed, "connection %d not closed after %v (%d bytes)", i, r.d, r.bytes)
		if fastest == 0 || r.d < fastest {
			fastest = r.d
		}
		slowest = max(slowest, r.d)
		bytes += r.bytes
	}
	timeouts := remotingMetric(t, f.MasterHTTP, "frame_timeouts_total") - timeoutsBefore
	after := rss(t, f.Master)
	t.Logf("slowloris: %d connections trickling 1 byte per %v (%d bytes in all) closed %v to %v after their first byte (serverFrameTimeoutMillis %v); frame timeouts +%v; master RSS %s -> %s",
		conns, interval, bytes, fastest.Round(time.Millisecond), slowest.Round(time.Millisecond), transportFrameTimeout, timeouts, mibs(before), mibs(after))
	require.GreaterOrEqual(t, fastest, transportFrameTimeout-100*time.Millisecond, "closed at the deadline, not before")
	require.EqualValues(t, conns, timeouts)
	require.LessOrEqual(t, after, before+16<<20)
	f.CheckInvariants(t)
}

// One connection pipelines 30,000 SEND_MESSAGE requests of 256 bytes and never reads an answer,
// while the bystander producer keeps sending on its own connection. The broker answers at most
// MaxInflightPerConn requests in flight per connection (SYSTEM_BUSY beyond), stops reading
// when the answers it cannot write pile up (a bounded write queue), and the connection's
// memory is bounded: RSS within the byte budget (96 MiB) of before while the flood is queued,
// and the process answers everyone else.
func requestFlood(t *testing.T, f *Fixture) {
	const requests, size = 30000, 256
	before := rss(t, f.Master)
	c, err := net.DialTimeout("tcp", f.MasterAddr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	body := make([]byte, size)
	var stream []byte
	for i := 0; i < requests; i++ {
		stream = append(stream, sendFrame(t, int32(i+1), body)...)
	}
	st0, err := f.MasterStatus()
	require.NoError(t, err)
	done := make(chan int, 1)
	go func() {
		_ = c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		n, _ := c.Write(stream)
		done <- n
	}()
	var peak int64
	var sends int
	var written int
	start := time.Now()
	for waiting := true; waiting; {
		select {
		case written = <-done:
			waiting = false
		default:
			f.SendOK(t, topic, []byte("during the request flood "+strconv.Itoa(sends)))
			sends++
			peak = max(peak, rss(t, f.Master))
		}
	}
	took := time.Since(start)
	// The broker works through what it read; the attacker still reads nothing.
	var stored int64
	_ = harness.WaitFor(20*time.Second, func() error {
		st, err := f.MasterStatus()
		if err != nil {
			return err
		}
		if st.MaxOffset != stored {
			stored = st.MaxOffset
			return errors.New("still storing")
		}
		return nil
	})
	peak = max(peak, rss(t, f.Master))
	busy := remotingMetric(t, f.MasterHTTP, `busy_total{reason="requests_per_connection"}`)
	require.True(t, f.Master.Running())
	_ = c.Close()
	after, _ := waitRSSBelow(t, f.Master, before+transportBytesInFlight, 10*time.Second)
	t.Logf("request flood: wrote %s of %s (%d requests) in %v without reading; master stored %s meanwhile, SYSTEM_BUSY (per connection) %v; bystander %d sends SEND_OK; master RSS %s, peak %s, after close %s",
		mibs(int64(written)), mibs(int64(len(stream))), requests, took.Round(time.Millisecond), mibs(stored-st0.MaxOffset), busy, sends, mibs(before), mibs(peak), mibs(after))
	require.LessOrEqual(t, peak, before+transportBytesInFlight, "memory bounded while the answers are not read")
	f.CheckInvariants(t)
}

// One connection pipelines 600 SEND_MESSAGE requests whose 64 KiB topic name is refused
// (MESSAGE_ILLEGAL, a remark that quotes the name twice) and never reads an answer. Answers
// carry at most 4 KiB of remark, so they stay far smaller than the requests the byte budget
// charged (before the cap each answer was twice its request and, held by handlers waiting for
// a full write queue, took the master to 438 MiB with a 96 MiB budget). Budget: RSS within
// twice the byte budget plus the write queue's 32 MiB of before, and back within 32 MiB once
// the connection is closed.
func unreadAnswers(t *testing.T, f *Fixture) {
	const requests = 600
	before := rss(t, f.Master)
	name := strings.Repeat("A", 64<<10)
	var stream []byte
	for i := 0; i < requests; i++ {
		req := remoting.NewRequest(remoting.SendMessage, sendExt(name, "-1", ""), []byte("x"))
		req.Opaque = int32(i + 1)
		b, err := remoting.EncodeFrame(nil, req)
		require.NoError(t, err)
		stream = append(stream, b...)
	}
	c, err := net.DialTimeout("tcp", f.MasterAddr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		_ = c.SetWriteDeadline(time.Now().Add(20 * time.Second))
		n, _ := c.Write(stream)
		done <- n
	}()
	var peak, held int64
	var written int
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case written = <-done:
			waiting = false
		case <-tick.C:
			peak = max(peak, rss(t, f.Master))
			held = max(held, int64(remotingMetric(t, f.MasterHTTP, "bytes_in_flight")))
		}
	}
	peak = max(peak, rss(t, f.Master))
	writing := time.Since(start)
	busy := remotingMetric(t, f.MasterHTTP, `busy_total{reason="bytes_in_flight"}`)
	f.SendOK(t, topic, []byte("while a connection does not read its answers"))
	require.True(t, f.Master.Running())
	_ = c.Close()
	limit := before + 2*transportBytesInFlight + 32<<20
	after, took := waitRSSBelow(t, f.Master, before+32<<20, 30*time.Second)
	t.Logf("unread answers: wrote %s of %s (%d requests) in %v; bytes in flight peaked at %s, SYSTEM_BUSY (bytes) %v so far; master RSS %s, peak %s (budget %s), %s %v after the close",
		mibs(int64(written)), mibs(int64(len(stream))), requests, writing.Round(time.Millisecond), mibs(held), busy, mibs(before), mibs(peak), mibs(limit), mibs(after), took.Round(100*time.Millisecond))
	require.LessOrEqual(t, peak, limit)
	require.LessOrEqual(t, after, before+32<<20, "the memory comes back after the close")
	f.CheckInvariants(t)
}

// serverMaxConnections=32: 200 connections opened at once and held. The listener serves up to
// its limit and closes the rest at accept (counted as connection_limit refusals); the
// bystander producer, connected before, keeps being served during the flood; once the flood
// is gone a new producer connects and sends. Budget: RSS within 16 MiB of before.
func connectionFlood(t *testing.T, f *Fixture) {
	const limit, flood = transportMaxConns, 200
	before := rss(t, f.Master)
	open0 := remotingMetric(t, f.MasterHTTP, "connections")
	refused0 := remotingMetric(t, f.MasterHTTP, `connections_refused_total{reason="connection_limit"}`)

	conns := make([]net.Conn, 0, flood)
	dialErrs := 0
	for i := 0; i < flood; i++ {
		c, err := net.DialTimeout("tcp", f.MasterAddr, 5*time.Second)
		if err != nil {
			dialErrs++
			continue
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	// A connection the server keeps stays silent; one it refused is closed at once.
	closed := make([]bool, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func(i int, c net.Conn) {
			defer wg.Done()
			_, closed[i] = closedWithin(c, 3*time.Second)
		}(i, c)
	}
	wg.Wait()
	refusedSeen := 0
	for _, cl := range closed {
		if cl {
			refusedSeen++
		}
	}
	during := rss(t, f.Master)
	open := remotingMetric(t, f.MasterHTTP, "connections")
	refused := remotingMetric(t, f.MasterHTTP, `connections_refused_total{reason="connection_limit"}`) - refused0
	f.SendOK(t, topic, []byte("during the connection flood, on the bystander's connection"))
	t.Logf("connection flood: %d dialled (%d dial errors), %d closed by the master at accept, %d held; master counts %v open (%v before), %v refused (connection_limit); RSS %s -> %s",
		len(conns), dialErrs, refusedSeen, len(conns)-refusedSeen, open, open0, refused, mibs(before), mibs(during))
	require.LessOrEqual(t, open, float64(limit))
	require.GreaterOrEqual(t, refusedSeen, flood-(limit-int(open0)), "everything beyond the limit refused")
	require.GreaterOrEqual(t, refused, float64(refusedSeen))
	require.LessOrEqual(t, during, before+16<<20)

	for _, c := range conns {
		_ = c.Close()
	}
	require.Eventually(t, func() bool { return remotingMetric(t, f.MasterHTTP, "connections") <= open0 }, 10*time.Second, 50*time.Millisecond)
	// A producer that connects only now.
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{f.NamesrvAddr}), producer.WithGroupName("attack-late"),
		producer.WithInstanceName(Instance("attack-late")), producer.WithRetry(2))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { _ = p.Shutdown() }()
	m := primitive.NewMessage(topic, []byte("after the connection flood, on a new connection"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	res, err := p.SendSync(ctx, m)
	cancel()
	f.Hist.Add(m, res, err)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	after := rss(t, f.Master)
	t.Logf("connection flood: a new producer served after the flood; master RSS %s", mibs(after))
	f.CheckInvariants(t)
}

// The master runs tls.server.mode=disabled and the slave tls.server.mode=enforcing. TLS
// ClientHellos to the master and plain requests to the slave are refused (the connection is
// closed; tls_in_disabled and plain_in_enforcing count them), both stay up, the master keeps
// serving plain clients and the slave TLS ones (the invariants read the slave over TLS).
func TestTLSMismatch(t *testing.T) {
	tlsCfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a test's self-signed certificate
	f := Start(t, Config{
		ExtraMaster: []string{"tls.server.mode=disabled"},
		ExtraSlave:  []string{"tls.server.mode=enforcing"},
		SlaveTLS:    tlsCfg,
	})
	f.SendOK(t, topic, []byte("before the TLS mismatch"))
	const n = 20
	for i := 0; i < n; i++ {
		d := &net.Dialer{Timeout: 5 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", f.MasterAddr, tlsCfg.Clone())
		if err == nil {
			_ = c.Close()
			t.Fatal("TLS handshake with a tls.server.mode=disabled master succeeded")
		}
		if i == 0 {
			t.Logf("TLS client to the disabled master: %v", err)
		}
	}
	cc := remoting.DefaultClientConfig()
	for i := 0; i < n; i++ {
		cli := remoting.NewClient(cc)
		_, err := Invoke(cli, f.SlaveAddr, remoting.GetBrokerClusterInfo, nil, nil)
		_ = cli.Close()
		require.Error(t, err, "a plain request to an enforcing slave is answered")
		if i == 0 {
			t.Logf("plain client to the enforcing slave: %v", err)
		}
	}
	refusedTLS := remotingMetric(t, f.MasterHTTP, `connections_refused_total{reason="tls_in_disabled"}`)
	refusedPlain := remotingMetric(t, f.SlaveHTTP, `connections_refused_total{reason="plain_in_enforcing"}`)
	t.Logf("TLS mismatch: master refused %v TLS clients (tls_in_disabled), slave refused %v plain clients (plain_in_enforcing)", refusedTLS, refusedPlain)
	require.EqualValues(t, n, refusedTLS)
	require.EqualValues(t, n, refusedPlain)
	f.CheckInvariants(t)
}
