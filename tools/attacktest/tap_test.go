package attacktest

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/rmqha/rmqha/libs/remoting"
)

// frame is one remoting frame a tap saw.
type frame struct {
	toServer bool
	raw      []byte // the whole frame, length prefix included
	cmd      *remoting.Command
}

// tap forwards connections to target and records the remoting frames in both directions
// (at most maxFrames), like a passive listener on the wire.
type tap struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frames []frame
	conns  []net.Conn
}

const maxFrames = 10000

func newTap(t testing.TB, target string) *tap {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{ln: ln, target: target}
	go tp.accept()
	t.Cleanup(tp.close)
	return tp
}

func (tp *tap) addr() string { return tp.ln.Addr().String() }

func (tp *tap) close() {
	_ = tp.ln.Close()
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for _, c := range tp.conns {
		_ = c.Close()
	}
}

func (tp *tap) accept() {
	for {
		c, err := tp.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", tp.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		tp.mu.Lock()
		tp.conns = append(tp.conns, c, s)
		tp.mu.Unlock()
		go tp.pipe(s, c, true)
		go tp.pipe(c, s, false)
	}
}

// pipe copies src to dst and records the frames of the stream.
func (tp *tap) pipe(dst, src net.Conn, toServer bool) {
	defer dst.Close()
	defer src.Close()
	pr, pw := io.Pipe()
	go tp.record(pr, toServer)
	_, _ = io.Copy(io.MultiWriter(dst, pw), src)
	_ = pw.Close()
}

func (tp *tap) record(r io.Reader, toServer bool) {
	defer io.Copy(io.Discard, r) // keep the copy going after a parse error
	for {
		var lb [4]byte
		if _, err := io.ReadFull(r, lb[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(lb[:])
		if n > 32<<20 {
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		cmd, err := remoting.DecodeFrame(body)
		if err != nil {
			return
		}
		tp.mu.Lock()
		if len(tp.frames) < maxFrames {
			tp.frames = append(tp.frames, frame{toServer: toServer, raw: append(lb[:], body...), cmd: cmd})
		}
		tp.mu.Unlock()
	}
}

// requests returns the recorded requests of code sent to the server, in order.
func (tp *tap) requests(code int32) []frame {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	var out []frame
	for _, f := range tp.frames {
		if f.toServer && !f.cmd.IsResponse() && f.cmd.Code == code {
			out = append(out, f)
		}
	}
	return out
}

// answers returns the server's answers to the recorded requests of code.
func (tp *tap) answers(code int32) []*remoting.Command {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	asked := map[int32]bool{}
	var out []*remoting.Command
	for _, f := range tp.frames {
		switch {
		case f.toServer && !f.cmd.IsResponse() && f.cmd.Code == code:
			asked[f.cmd.Opaque] = true
		case !f.toServer && f.cmd.IsResponse() && asked[f.cmd.Opaque]:
			out = append(out, f.cmd)
		}
	}
	return out
}

// replay writes raw (one recorded frame) on a new connection to addr and returns the answer.
func replay(t testing.TB, addr string, raw []byte) *remoting.Command {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.Copy(c, bytes.NewReader(raw)); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := remoting.ReadFrame(c, nil, 16<<20)
		if err != nil {
			t.Fatalf("no answer to the replayed frame: %v", err)
		}
		cmd, err := remoting.DecodeFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		if cmd.IsResponse() {
			return cmd
		}
	}
}
