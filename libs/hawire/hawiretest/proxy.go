package hawiretest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy that can delay, throttle and cut a link.
type Proxy struct {
	ln       net.Listener
	target   string
	delay    atomic.Int64 // nanoseconds added to every chunk, each way
	rate     atomic.Int64 // bytes per second each way, 0 = unlimited
	cut      atomic.Bool
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
	closed   atomic.Bool
	accepted atomic.Int64
}

// NewProxy listens on 127.0.0.1 and forwards to target; it is closed with the test.
func NewProxy(t testing.TB, target string) *Proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the address clients dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted counts accepted client connections.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// SetDelay adds d of one-way latency to every chunk.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// SetThrottle limits each direction to bytesPerSec (0 = unlimited).
func (p *Proxy) SetThrottle(bytesPerSec int64) { p.rate.Store(bytesPerSec) }

// Cut closes every connection and refuses new ones until Heal.
func (p *Proxy) Cut() {
	p.cut.Store(true)
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}

// Heal accepts connections again and removes delay and throttle.
func (p *Proxy) Heal() {
	p.SetDelay(0)
	p.SetThrottle(0)
	p.cut.Store(false)
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() {
	if p.closed.Swap(true) {
		return
	}
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut.Load() || p.closed.Load() {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		if !p.track(c) {
			_ = c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil || !p.track(up) {
			if up != nil {
				_ = up.Close()
			}
			p.untrack(c)
			continue
		}
		p.wg.Add(2)
		go p.pump(c, up)
		go p.pump(up, c)
	}
}

type chunk struct {
	b  []byte
	at time.Time
}

// pump copies src to dst; a second goroutine releases chunks after the delay
// and at the throttled rate.
func (p *Proxy) pump(src, dst net.Conn) {
	defer p.wg.Done()
	q := make(chan chunk, 1024)
	kill := make(chan struct{}) // closed when src ends: pending sleeps stop at once
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer p.untrack(dst)
		for ch := range q {
			if d := time.Until(ch.at); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-kill:
					t.Stop()
					return
				}
			}
			b := ch.b
			for len(b) > 0 {
				n := len(b)
				if r := p.rate.Load(); r > 0 {
					n = min(n, int(max(r/100, 1)))
					time.Sleep(time.Duration(int64(n) * int64(time.Second) / r))
				}
				if _, err := dst.Write(b[:n]); err != nil {
					return
				}
				b = b[n:]
			}
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case q <- chunk{b: append([]byte(nil), buf[:n]...), at: time.Now().Add(time.Duration(p.delay.Load()))}:
			case <-done:
			}
		}
		if err != nil {
			break
		}
	}
	close(kill)
	close(q)
	<-done
	p.untrack(src)
}
