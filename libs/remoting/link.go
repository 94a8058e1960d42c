package remoting

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rmqha/rmqha/libs/quietsock"
)

const (
	// maxQueuedBytes is the soft cap on encoded frames waiting for the writer; producers that
	// may block wait for the writer to drain below it (back-pressure instead of unbounded memory).
	maxQueuedBytes = 32 << 20
	// shrinkAbove: write buffers that grew past this are dropped after use instead of kept.
	shrinkAbove = 4 << 20
)

// link is the part of a connection shared by the server and client sides: a single writer
// goroutine draining a byte queue (frames appended by any goroutine, written in batches, one
// Write per drain), and a table of calls waiting for a response by opaque. On a client's
// plain TCP connection the reader may write a corked batch itself (uncork); one batch is
// written at a time (writing), in queue order.
type link struct {
	// nc carries the frames: the socket itself, or a *tls.Conn over it. Set before the writer
	// starts and not changed after.
	nc net.Conn
	// raw is the socket; close closes it (not nc), so that closing never waits for a TLS
	// close_notify to be written to a peer that does not read.
	raw          net.Conn
	writeTimeout time.Duration

	wmu       sync.Mutex
	dataCond  *sync.Cond // writer waits for data
	spaceCond *sync.Cond // blocking producers wait for space
	queue     []byte
	closed    bool
	// corked holds the writer back while a client's reader runs the callbacks of the answers
	// it holds (cork): the requests they send leave in one write at uncork.
	corked bool
	// released: what is queued is a batch uncork released, so the writer writes it without
	// first yielding for more.
	released bool
	// writing: a batch taken from the queue is being written, by the writer or by uncork's
	// direct write; the other waits, so that batches leave in queue order.
	writing bool
	// direct, when set (a client's plain TCP socket), lets uncork write the released batch
	// itself with one non-blocking write, instead of waking the writer for it (directWrite).
	direct syscall.RawConn
	// dbuf, dn and derr are directWrite's buffer and result, owned by whoever set writing;
	// dwrite is the function the socket calls, made once. dspare is uncork's spare buffer.
	dbuf   []byte
	dn     int
	derr   error
	dwrite func(fd uintptr) bool
	dspare []byte
	// quiet is the writer's writer on a plain socket (libs/quietsock): its batches are written
	// with raw system calls, waiting in the poller while the socket is full.
	quiet *quietsock.Writer
	// directCalls (a client's link with direct writes) lets call write its request itself
	// (sendDirect) when nothing is queued ahead of it.
	directCalls bool

	pmu     sync.Mutex
	pending map[int32]waiter

	closeOnce sync.Once
	done      chan struct{}
	cause     atomic.Value // error: why the link closed
}

func newLink(nc net.Conn, writeTimeout time.Duration) *link {
	l := &link{
		nc:           nc,
		raw:          nc,
		writeTimeout: writeTimeout,
		pending:      make(map[int32]waiter),
		done:         make(chan struct{}),
	}
	l.dataCond = sync.NewCond(&l.wmu)
	l.spaceCond = sync.NewCond(&l.wmu)
	return l
}

// send encodes c onto the write queue. With block set it waits while the queue is over its
// soft cap. It fails with ErrClosed once the link is closed.
func (l *link) send(c *Command, block bool) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	for block && !l.closed && len(l.queue) > maxQueuedBytes {
		l.spaceCond.Wait()
	}
	if l.closed {
		return l.closedErr()
	}
	wasEmpty := len(l.queue) == 0
	q, err := EncodeFrame(l.queue, c)
	if err != nil {
		return err
	}
	l.queue = q
	if wasEmpty && !l.corked {
		l.dataCond.Signal()
	}
	return nil
}

// trySend is send without waiting: while the queue is over its soft cap it queues nothing and
// reports false, so a goroutine that answers for many connections (a replication ack) never
// waits for one peer that does not read.
func (l *link) trySend(c *Command) (bool, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.closed {
		return false, l.closedErr()
	}
	if len(l.queue) > maxQueuedBytes {
		return false, nil
	}
	wasEmpty := len(l.queue) == 0
	q, err := EncodeFrame(l.queue, c)
	if err != nil {
		return false, err
	}
	l.queue = q
	if wasEmpty && !l.corked {
		l.dataCond.Signal()
	}
	return true, nil
}

func (l *link) closedErr() error {
	if cause, _ := l.cause.Load().(error); cause != nil && !errors.Is(cause, ErrClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	return ErrClosed
}

// writeLoop is the single writer: it takes everything queued, writes it in one call, and
// sleeps only when the queue is empty, so concurrent responses coalesce into few syscalls.
func (l *link) writeLoop() {
	var spare []byte
	yielded := false
	for {
		l.wmu.Lock()
		l.writing = false // the batch this loop took last, if any, is written
		for (len(l.queue) == 0 || l.corked || l.writing) && !l.closed {
			l.dataCond.Wait()
		}
		if l.closed {
			l.wmu.Unlock()
			return
		}
		if !yielded && !l.released {
			// Let the goroutines that are ready to answer (handlers woken together by one
			// replication ack or flush) queue theirs too, so they leave in this write. With
			// nothing else runnable this returns at once.
			yielded = true
			l.wmu.Unlock()
			runtime.Gosched()
			continue
		}
		yielded, l.released = false, false
		buf := l.queue
		l.queue = spare[:0]
		l.writing = true
		l.spaceCond.Broadcast()
		l.wmu.Unlock()

		if l.writeTimeout > 0 {
			_ = l.nc.SetWriteDeadline(time.Now().Add(l.writeTimeout))
		}
		var err error
		if l.quiet != nil {
			_, err = l.quiet.Write(buf)
		} else {
			_, err = l.nc.Write(buf)
		}
		if err != nil {
			l.close(fmt.Errorf("%w: write: %w", ErrConnFailed, err))
			return
		}
		if cap(buf) > shrinkAbove {
			buf = nil
		}
		spare = buf
	}
}

// enableDirect lets uncork write released batches, and sendDirect lone frames, on the calling
// goroutine (a plain TCP socket only: the write must be the socket's own, which a TLS record
// layer is not).
func (l *link) enableDirect() {
	sc, ok := l.raw.(syscall.Conn)
	if !ok || l.nc != l.raw {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	l.dwrite = func(fd uintptr) bool {
		l.dn, l.derr = quietsock.TryWrite(fd, l.dbuf)
		return true // never wait for room: what does not fit goes to the writer
	}
	l.quiet = quietsock.NewWriter(l.raw)
	l.direct = rc
}

// directWrite writes what it can of buf without waiting (the socket is non-blocking) and
// reports how much left; an error other than a full socket fails the link.
func (l *link) directWrite(buf []byte) (int, error) {
	l.dbuf = buf
	err := l.direct.Write(l.dwrite)
	n, werr := l.dn, l.derr
	l.dbuf, l.derr = nil, nil
	if err == nil && werr != nil && werr != syscall.EAGAIN && werr != syscall.EINTR {
		err = werr
	}
	return max(n, 0), err
}

// cork holds the writer until uncork: frames queued meanwhile leave together at uncork. The
// client's reader corks from the first asynchronous callback it runs until it has handled the
// frames it holds (the last complete one in its buffer), so the requests those callbacks send
// (an asynchronous window refilled from them) go out in one write per batch of answers, not
// one write for the first and another for the rest. Only the reader corks, and only while it
// handles frames it holds, so a corked writer never waits on the network.
func (l *link) cork() {
	l.wmu.Lock()
	l.corked = true
	l.wmu.Unlock()
}

// uncork releases what was queued while corked. With direct writes (enableDirect) and no
// batch being written it writes the batch itself, in one non-blocking write on the calling
// goroutine (the reader), instead of waking the writer: one wake-up and two scheduler
// hand-offs less per batch. Whatever the socket does not take at once goes to the writer
// ahead of what was queued meanwhile, so the reader never waits for a peer that does not read.
func (l *link) uncork() {
	l.wmu.Lock()
	l.corked = false
	if len(l.queue) == 0 {
		l.wmu.Unlock()
		return
	}
	if l.direct == nil || l.writing || l.closed {
		l.released = true
		l.dataCond.Signal()
		l.wmu.Unlock()
		return
	}
	buf := l.queue
	l.queue = l.dspare[:0]
	l.dspare = nil
	l.writing = true
	l.spaceCond.Broadcast()
	l.wmu.Unlock()
	l.writeTaken(buf)
}

// writeTaken writes buf, a batch the caller took (writing set, wmu not held), with one
// non-blocking write; what the socket does not take goes to the writer ahead of what was queued
// meanwhile.
func (l *link) writeTaken(buf []byte) {
	n, err := l.directWrite(buf)

	l.wmu.Lock()
	l.writing = false
	switch {
	case err != nil || l.closed:
	case n < len(buf):
		// The rest first, then what others queued meanwhile; the writer waits for room.
		rest := copy(buf, buf[n:])
		queued := l.queue
		l.queue = append(buf[:rest], queued...)
		l.dspare = queued[:0]
		l.released = true
		l.dataCond.Signal()
	default:
		if len(l.queue) > 0 {
			l.dataCond.Signal() // queued while this wrote; the writer waited for it
		}
		if cap(buf) <= shrinkAbove {
			l.dspare = buf[:0]
		}
	}
	l.wmu.Unlock()
	if err != nil {
		l.close(fmt.Errorf("%w: write: %w", ErrConnFailed, err))
	}
}

// sendDirect writes c itself, with one non-blocking write on the calling goroutine, when the
// link allows direct writes and nothing is queued or being written (so the frame cannot pass
// another): one wake-up of the writer and two scheduler hand-offs less for a lone answer. It
// reports false, with nothing written, otherwise; the caller then queues c as usual.
func (l *link) sendDirect(c *Command) (bool, error) {
	l.wmu.Lock()
	if l.direct == nil || l.writing || l.corked || l.closed || len(l.queue) > 0 {
		l.wmu.Unlock()
		return false, nil
	}
	buf, err := EncodeFrame(l.dspare[:0], c)
	if err != nil {
		l.wmu.Unlock()
		return true, err
	}
	l.dspare = nil
	l.writing = true
	l.wmu.Unlock()
	l.writeTaken(buf)
	return true, nil
}

// close shuts the link once: marks it closed, closes the socket (unblocking reader and
// writer) and fails every pending call. Asynchronous calls are failed through their callbacks
// here, after the link is marked closed, by the goroutine whose close shut it.
func (l *link) close(cause error) {
	var pending map[int32]waiter
	l.closeOnce.Do(func() {
		if cause == nil {
			cause = ErrClosed
		}
		l.cause.Store(cause)
		l.wmu.Lock()
		l.closed = true
		l.queue = nil
		l.dataCond.Broadcast()
		l.spaceCond.Broadcast()
		l.wmu.Unlock()
		_ = l.raw.Close()
		close(l.done)
		l.pmu.Lock()
		pending = l.pending
		l.pending = nil // waiters select on done
		l.pmu.Unlock()
	})
	// Outside the Once: a callback may close the client, which closes this link again.
	l.failAsync(pending)
}

func (l *link) isClosed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *link) err() error {
	cause, _ := l.cause.Load().(error)
	if cause == nil {
		return ErrClosed
	}
	return cause
}

// waiter is a call waiting for its answer: a goroutine blocked on ch (call), or a callback
// (callAsync, async.go).
type waiter struct {
	ch chan *Command
	// typed: the caller takes the custom header through an ExtDecoder (Client.InvokeExt), so
	// the reader keeps it unparsed instead of filling a map.
	typed bool

	// done, when set, is an asynchronous call's callback (ch is nil); dec, when set, takes its
	// answer's custom header (typed then).
	done Callback
	dec  ExtDecoder
	// deadline is when the sweeper fails an asynchronous call; code names it in errors.
	deadline time.Time
	code     int32
}

// register adds a waiter for opaque; it returns nil when the link is closed.
func (l *link) register(opaque int32, typed bool) chan *Command {
	ch := replyChan()
	l.pmu.Lock()
	defer l.pmu.Unlock()
	if l.pending == nil {
		replyChans.Put(ch)
		return nil
	}
	l.pending[opaque] = waiter{ch: ch, typed: typed}
	return ch
}

// take removes and returns the call waiting for opaque: whoever takes a call answers it, once.
func (l *link) take(opaque int32) (waiter, bool) {
	l.pmu.Lock()
	w, ok := l.pending[opaque]
	if ok {
		delete(l.pending, opaque)
	}
	l.pmu.Unlock()
	return w, ok
}

// replyChans holds empty reply channels for reuse: a call puts its channel back only after it
// received the answer from it, so no late answer can be sent into a reused one.
var replyChans sync.Pool

func replyChan() chan *Command {
	if ch, ok := replyChans.Get().(chan *Command); ok {
		return ch
	}
	return make(chan *Command, 1)
}

// callTimers holds stopped timers for calls whose deadline is the default timeout, instead of
// a context with a timer per call.
var callTimers sync.Pool

func callTimer(d time.Duration) *time.Timer {
	if t, ok := callTimers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func (l *link) unregister(opaque int32) {
	l.take(opaque)
}

// complete hands a response to its waiter; it reports false for an unknown opaque (late
// answers after a timeout, answers to oneway calls), which are dropped. An asynchronous
// call's callback runs here, on the caller's (the reader's) goroutine.
func (l *link) complete(resp *Command) bool {
	w, ok := l.take(resp.Opaque)
	if ok {
		w.answer(resp)
	}
	return ok
}

// call sends req (whose opaque is already set) and waits for the matching response, the
// deadline, or the link's failure. defTimeout applies when ctx has no deadline. typed: see
// waiter.
func (l *link) call(ctx context.Context, req *Command, defTimeout time.Duration, typed bool) (*Command, error) {
	var expired <-chan time.Time
	if _, ok := ctx.Deadline(); !ok && defTimeout > 0 {
		t := callTimer(defTimeout)
		defer func() {
			t.Stop() // since Go 1.23 a stopped timer's channel holds nothing stale for its next Reset
			callTimers.Put(t)
		}()
		expired = t.C
	}
	if err := ctx.Err(); err != nil {
		return nil, requestCtxErr(req, err)
	}
	ch := l.register(req.Opaque, typed)
	if ch == nil {
		return nil, l.closedErr()
	}
	// A lone call on an idle connection (a synchronous producer's) writes its request itself:
	// the writer's wake-up and two scheduler hand-offs less per call. Behind queued frames it
	// queues as usual, so frames never pass one another.
	sent := false
	if l.directCalls {
		var err error
		if sent, err = l.sendDirect(req); err != nil {
			l.unregister(req.Opaque)
			return nil, err
		}
	}
	if !sent {
		if err := l.send(req, false); err != nil {
			l.unregister(req.Opaque)
			return nil, err
		}
	}
	select {
	case resp := <-ch:
		replyChans.Put(ch)
		return resp, nil
	case <-l.done:
		select { // the response may have raced the close
		case resp := <-ch:
			replyChans.Put(ch)
			return resp, nil
		default:
		}
		return nil, fmt.Errorf("%w: %s opaque %d: %w", ErrConnFailed, RequestName(req.Code), req.Opaque, l.err())
	case <-ctx.Done():
		l.unregister(req.Opaque)
		return nil, requestCtxErr(req, ctx.Err())
	case <-expired:
		l.unregister(req.Opaque)
		return nil, requestCtxErr(req, context.DeadlineExceeded)
	}
}

func requestCtxErr(req *Command, err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s opaque %d: %w", ErrTimeout, RequestName(req.Code), req.Opaque, err)
	}
	return fmt.Errorf("remoting: %s opaque %d: %w", RequestName(req.Code), req.Opaque, err)
}
