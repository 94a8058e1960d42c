package attacktest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Front is a TCP forwarder on loopback standing in front of an address (the master's HA port):
// connections are piped to the current upstream, the first bytes of each direction of every
// connection can be recorded, and the upstream can be switched to an impostor or to a replay
// of recorded bytes.
type Front struct {
	ln       net.Listener
	mu       sync.Mutex
	upstream string
	replay   []byte // when set, every connection is answered with these bytes instead
	record   int    // bytes to record per direction per connection
	rec      []Recording
	conns    map[net.Conn]struct{}
	accepted atomic.Int64
	wg       sync.WaitGroup
	closed   atomic.Bool
}

// Recording holds the first bytes of one connection through the front.
type Recording struct {
	ToUpstream, FromUpstream []byte
}

// NewFront listens on 127.0.0.1 and forwards to upstream.
func NewFront(upstream string) (*Front, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &Front{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the address clients dial.
func (f *Front) Addr() string { return f.ln.Addr().String() }

// Accepted counts accepted connections.
func (f *Front) Accepted() int64 { return f.accepted.Load() }

// Forward sends new connections to upstream, closing the current ones.
func (f *Front) Forward(upstream string) {
	f.mu.Lock()
	f.upstream, f.replay = upstream, nil
	f.mu.Unlock()
	f.CutAll()
}

// Replay answers every new connection with b (then holds it open, reading, until the peer
// closes), closing the current ones.
func (f *Front) Replay(b []byte) {
	f.mu.Lock()
	f.replay = append([]byte(nil), b...)
	f.mu.Unlock()
	f.CutAll()
}

// Record starts recording the first n bytes of each direction of every new connection.
func (f *Front) Record(n int) {
	f.mu.Lock()
	f.record, f.rec = n, nil
	f.mu.Unlock()
}

// Recordings returns what was recorded so far.
func (f *Front) Recordings() []Recording {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Recording, len(f.rec))
	for i, r := range f.rec {
		out[i] = Recording{append([]byte(nil), r.ToUpstream...), append([]byte(nil), r.FromUpstream...)}
	}
	return out
}

// CutAll closes every open connection.
func (f *Front) CutAll() {
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
}

// Close stops the front.
func (f *Front) Close() {
	if f.closed.Swap(true) {
		return
	}
	_ = f.ln.Close()
	f.CutAll()
	f.wg.Wait()
}

func (f *Front) track(c net.Conn, add bool) {
	f.mu.Lock()
	if add {
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	f.mu.Unlock()
}

func (f *Front) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.accepted.Add(1)
		f.mu.Lock()
		upstream, replay, record := f.upstream, f.replay, f.record
		idx := -1
		if record > 0 && replay == nil {
			f.rec = append(f.rec, Recording{})
			idx = len(f.rec) - 1
		}
		f.mu.Unlock()
		f.track(c, true)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() { f.track(c, false); _ = c.Close() }()
			if replay != nil {
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := c.Write(replay); err == nil {
					_, _ = io.Copy(io.Discard, c)
				}
				return
			}
			up, err := net.DialTimeout("tcp", upstream, 2*time.Second)
			if err != nil {
				return
			}
			f.track(up, true)
			defer func() { f.track(up, false); _ = up.Close() }()
			done := make(chan struct{}, 2)
			go func() { f.pipe(up, c, idx, record, true); done <- struct{}{} }()
			go func() { f.pipe(c, up, idx, record, false); done <- struct{}{} }()
			<-done
		}()
	}
}

// pipe copies src to dst, recording the first max bytes.
func (f *Front) pipe(dst, src net.Conn, idx, max int, toUpstream bool) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if idx >= 0 {
				f.mu.Lock()
				if idx < len(f.rec) {
					r := &f.rec[idx]
					p := &r.FromUpstream
					if toUpstream {
						p = &r.ToUpstream
					}
					if room := max - len(*p); room > 0 {
						*p = append(*p, buf[:min(n, room)]...)
					}
				}
				f.mu.Unlock()
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
