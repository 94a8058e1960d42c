package hawiretest

import (
	"crypto/rand"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
)

// FakeMaster is an impostor on a master's HA address: it greets every slave
// with a Hello, reads its Handshake, writes whatever its answer function
// returns and closes. Attack tests point slaves at it.
type FakeMaster struct {
	ln         net.Listener
	answer     func(hello hawire.Hello, hs hawire.Handshake) [][]byte
	hello      func() hawire.Hello
	conns      atomic.Int64
	handshakes atomic.Int64
	wg         sync.WaitGroup
	mu         sync.Mutex
	open       map[net.Conn]struct{}
	closed     atomic.Bool
}

// NewFakeMaster listens on 127.0.0.1 and answers every handshake with the
// frames answer returns (nil: close without a word). It is closed with the test.
func NewFakeMaster(t testing.TB, answer func(hello hawire.Hello, hs hawire.Handshake) [][]byte) *FakeMaster {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &FakeMaster{ln: ln, answer: answer, open: map[net.Conn]struct{}{}, hello: func() hawire.Hello {
		h := hawire.Hello{MinVersion: hawire.MinVersion, MaxVersion: hawire.MaxVersion}
		_, _ = rand.Read(h.Nonce[:])
		return h
	}}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.Close)
	return f
}

// SetHello replaces the Hello the impostor sends (to offer other versions).
func (f *FakeMaster) SetHello(h func() hawire.Hello) {
	f.mu.Lock()
	f.hello = h
	f.mu.Unlock()
}

// Addr is the address slaves dial.
func (f *FakeMaster) Addr() string { return f.ln.Addr().String() }

// Connections counts accepted connections.
func (f *FakeMaster) Connections() int64 { return f.conns.Load() }

// Handshakes counts handshakes received.
func (f *FakeMaster) Handshakes() int64 { return f.handshakes.Load() }

// Close stops listening and closes open connections.
func (f *FakeMaster) Close() {
	if f.closed.Swap(true) {
		return
	}
	_ = f.ln.Close()
	f.mu.Lock()
	for c := range f.open {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *FakeMaster) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.conns.Add(1)
		f.mu.Lock()
		f.open[c] = struct{}{}
		hello := f.hello()
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() {
				f.mu.Lock()
				delete(f.open, c)
				f.mu.Unlock()
				_ = c.Close()
			}()
			f.serve(c, hello)
		}()
	}
}

func (f *FakeMaster) serve(c net.Conn, hello hawire.Hello) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(hawire.AppendHello(nil, hello)); err != nil {
		return
	}
	fr := hawire.NewFrameReader(c, 0)
	typ, body, err := fr.Next(hawire.MaxHandshakeFrame)
	if err != nil || typ != hawire.FrameHandshake {
		return
	}
	hs, err := hawire.DecodeHandshake(body)
	if err != nil {
		return
	}
	f.handshakes.Add(1)
	for _, b := range f.answer(hello, hs) {
		if _, err := c.Write(b); err != nil {
			return
		}
	}
	// Let the slave read everything before the close.
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	for {
		if _, _, err := fr.Next(hawire.MaxControlFrame); err != nil {
			return
		}
	}
}

// Refusal is an Error frame answer from a master of the given epoch and log
// bounds, proven with secret ("" = no proof, as a stranger sends it).
func Refusal(secret string, code hawire.ErrorCode, offset, epoch, masterMin, masterMax int64) func(hawire.Hello, hawire.Handshake) [][]byte {
	return func(hello hawire.Hello, hs hawire.Handshake) [][]byte {
		e := hawire.ErrorFrame{Code: code, Offset: offset, Message: "impostor", Extended: true,
			MasterEpoch: epoch, MasterMin: masterMin, MasterMax: masterMax}
		if secret != "" {
			e.Proof = hawire.ErrorProof(secret, hello.Nonce, hs, e)
		}
		return [][]byte{hawire.AppendError(nil, e)}
	}
}

// AcceptWithData accepts the slave (proven with secret, "" = no proof) at its
// max offset in a new epoch and streams records from there.
func AcceptWithData(secret string, epoch int64, records []byte) func(hawire.Hello, hawire.Handshake) [][]byte {
	return func(hello hawire.Hello, hs hawire.Handshake) [][]byte {
		start := hs.MaxOffset
		a := hawire.Accept{Epoch: epoch, StartOffset: start, MasterMin: 0, MasterMax: start + int64(len(records)),
			Epochs: []hawire.EpochEntry{{Epoch: epoch, StartOffset: 0}}}
		if secret != "" {
			a.Proof = hawire.AcceptProof(secret, hello.Nonce, hs, a)
		}
		d := hawire.Data{Epoch: epoch, StartOffset: start, MasterMax: a.MasterMax, CRC: hawire.BatchCRC(records), Records: records}
		return [][]byte{hawire.AppendAccept(nil, a), hawire.AppendData(nil, d)}
	}
}
