package remoting

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Asynchronous calls
//
// Invoke parks a goroutine per call on a reply channel: with many calls in flight each answer
// costs a channel send, a wake-up and a scheduler hand-off. InvokeAsync instead registers a
// Callback with the call's opaque and returns once the request is queued for writing; the
// connection's reader runs the callback when the answer arrives, with no goroutine, channel
// or timer per call. A caller that keeps a window of calls in flight can send the next one
// from the callback itself.
//
// Deadlines are swept, not timed: one goroutine per Client (started by the first
// InvokeAsync, stopped by Close) looks through every connection's pending calls each
// asyncSweepEvery and fails those whose deadline passed, so a call times out up to that much
// late. A late answer to a call that was failed is dropped, as it is for Invoke.
//
// Who runs a callback:
//   - an answer: the connection's reader goroutine, in the order the answers arrive on the
//     connection (the order the server wrote them);
//   - a timeout: the sweeper goroutine (ErrTimeout);
//   - a connection failure or Close: the goroutine that closed the connection (its reader or
//     writer, Close, CloseAddr), after the connection is marked closed, for every call pending
//     on it in opaque order (ErrConnFailed wrapping the cause, ErrClosed after Close).
//
// Every call InvokeAsync accepted (returned nil) gets exactly one callback; a call it refused
// (returned an error) gets none. The callback may run before InvokeAsync returns.

// asyncSweepEvery is how often the sweeper fails asynchronous calls past their deadline: the
// most a timeout is late. A sweep holds each connection's table of pending calls while it
// walks it, a few microseconds for hundreds of calls.
const asyncSweepEvery = 100 * time.Millisecond

// Callback receives the outcome of one Client.InvokeAsync: the answer, or the reason there is
// none. An interface rather than a function so that a caller can pass a long-lived object (a
// window slot) without a closure allocated per call.
//
// InvokeDone runs on one of the client's goroutines (see "Who runs a callback" in async.go):
// it must not block, and must not call Client.Close (which waits for those goroutines). It
// may call InvokeAsync, which does not wait for the connection's writer, though it waits for
// a dial when there is no connection to its address. resp and everything it holds (Body,
// Remark) are valid only until InvokeDone returns: an answer taken typed is read straight from
// the connection's read buffer, which the next frame overwrites. Copy what you keep.
type Callback interface {
	InvokeDone(resp *Command, err error)
}

// CallbackFunc adapts a function to Callback (a closure: one allocation where it is made).
type CallbackFunc func(resp *Command, err error)

// InvokeDone calls f.
func (f CallbackFunc) InvokeDone(resp *Command, err error) { f(resp, err) }

// InvokeAsync sends req to addr and returns once it is queued for writing; done receives the
// answer (see Callback). req is copied with a fresh opaque, as by Invoke, and may be changed
// or sent again as soon as InvokeAsync returns. dec, when not nil, takes the answer's custom
// header fields one by one, on the goroutine that runs done and just before it, as for
// InvokeExt (resp.ExtFields is nil then); without dec resp.ExtFields holds them. deadline is
// when the call fails with ErrTimeout (zero: RequestTimeout from now); it also bounds a dial
// when there is no connection to addr yet, which InvokeAsync waits for. An error means the
// request was not sent and done will not be called.
func (c *Client) InvokeAsync(addr string, req *Command, dec ExtDecoder, deadline time.Time, done Callback) error {
	if deadline.IsZero() {
		deadline = time.Now().Add(c.cfg.RequestTimeout)
	}
	c.sweepOnce.Do(c.startSweeper)
	cc, ok := c.ready(addr)
	if !ok {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		var err error
		cc, err = c.conn(ctx, addr)
		cancel()
		if err != nil {
			return err
		}
	}
	// As in invoke: an unsigned copy stays on this stack, the link encodes it before return.
	var cp Command
	out := &cp
	if c.cfg.Signer != nil {
		out = c.prepare(req)
	} else {
		cp = *req
		cp.Opaque = c.opaque.Add(1)
	}
	out.Flag &^= FlagResponse | FlagOneway
	w := waiter{typed: dec != nil, done: done, dec: dec, deadline: deadline, code: out.Code}
	if err := cc.link.callAsync(out, w); err != nil {
		return fmt.Errorf("%w (addr %s)", err, addr)
	}
	return nil
}

// callAsync registers w for req's opaque and queues req. It reports an error only when the
// call was not registered or was taken back; a call that the link's close took before it
// could be taken back is failed through its callback, and callAsync reports nil.
func (l *link) callAsync(req *Command, w waiter) error {
	l.pmu.Lock()
	if l.pending == nil {
		l.pmu.Unlock()
		return l.closedErr()
	}
	l.pending[req.Opaque] = w
	l.pmu.Unlock()
	if err := l.send(req, false); err != nil {
		if _, mine := l.take(req.Opaque); mine {
			return err
		}
	}
	return nil
}

// answer hands resp to the call: to its goroutine, or to its decoder and callback.
func (w *waiter) answer(resp *Command) {
	if w.done == nil {
		w.ch <- resp
		return
	}
	if w.dec != nil {
		resp.decodeExt(w.dec)
	} else if resp.rawExt != nil {
		resp.extMap()
	}
	w.done.InvokeDone(resp, nil)
}

// fail fails the call with err (a call taken from the table just before its link closed).
func (w *waiter) fail(err error) {
	if w.done != nil {
		w.done.InvokeDone(nil, err)
	}
	// A goroutine in call sees the link's done instead.
}

// answerInPlace is answer for a response decoded in place, whose custom header fields spans
// holds already: they go to the decoder without a second walk of the object.
func (w *waiter) answerInPlace(resp *Command, spans *extSpans) {
	if w.dec != nil && !spans.over {
		spans.feed(w.dec)
		resp.rawExt = nil
	}
	spans.reset()
	w.answer(resp)
}

// expiredCall is an asynchronous call taken from a link by a sweep or a close.
type expiredCall struct {
	opaque int32
	w      waiter
}

// failAsync fails the asynchronous calls among pending (a closed link's table) in opaque order.
func (l *link) failAsync(pending map[int32]waiter) {
	if len(pending) == 0 {
		return
	}
	calls := make([]expiredCall, 0, len(pending))
	for op, w := range pending {
		if w.done != nil {
			calls = append(calls, expiredCall{op, w})
		}
	}
	sortCalls(calls)
	cause := l.err()
	for _, e := range calls {
		e.w.done.InvokeDone(nil, fmt.Errorf("%w: %s opaque %d: %w", ErrConnFailed, RequestName(e.w.code), e.opaque, cause))
	}
}

// sweep takes the asynchronous calls whose deadline is not after now, appended to buf.
func (l *link) sweep(now time.Time, buf []expiredCall) []expiredCall {
	l.pmu.Lock()
	for op, w := range l.pending {
		if w.done != nil && !now.Before(w.deadline) {
			buf = append(buf, expiredCall{op, w})
			delete(l.pending, op)
		}
	}
	l.pmu.Unlock()
	return buf
}

func sortCalls(calls []expiredCall) {
	slices.SortFunc(calls, func(a, b expiredCall) int { return int(a.opaque) - int(b.opaque) })
}

// startSweeper starts the goroutine that times asynchronous calls out (once per Client).
func (c *Client) startSweeper() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return // Close failed or fails every call
	}
	c.wg.Add(1)
	go c.sweepLoop()
}

func (c *Client) sweepLoop() {
	defer c.wg.Done()
	t := time.NewTicker(asyncSweepEvery)
	defer t.Stop()
	var links []*link
	var expired []expiredCall
	for {
		select {
		case <-c.ctx.Done():
			return
		case now := <-t.C:
			links = c.liveLinks(links[:0])
			for _, l := range links {
				expired = l.sweep(now, expired[:0])
				sortCalls(expired)
				for _, e := range expired {
					e.w.done.InvokeDone(nil, fmt.Errorf("%w: %s opaque %d: %w", ErrTimeout, RequestName(e.w.code), e.opaque, context.DeadlineExceeded))
				}
				clear(expired) // drop the callbacks' references
			}
			clear(links)
		}
	}
}

// liveLinks appends the links of the dialled connections to buf.
func (c *Client) liveLinks(buf []*link) []*link {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cc := range c.conns {
		select {
		case <-cc.ready:
			if cc.link != nil {
				buf = append(buf, cc.link)
			}
		default:
		}
	}
	return buf
}
