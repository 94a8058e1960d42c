package main

import (
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
)

// The async send window
//
// -mode async keeps -inflight sends in flight with no goroutine per send: each window slot is
// a remoting.Callback. The run goroutine starts every slot's first send; from then on a slot's
// callback, run by the connection's reader when the answer arrives, records it and sends the
// slot's next message, so the reader's answers and the next requests leave in the writer's
// next write. A slot retires when the tickets run out or the run stops; the run ends when
// every slot retired, which is after its last answer (or failure) was recorded. A send that
// InvokeAsync refuses (the client closed, a failed dial) is counted as an error, and a slot
// refused from a callback goes back to the run goroutine, which retries it there, so a reader
// never loops over failing sends.
//
// Per message: the slot's templates are patched as in the other modes, the answer's header
// goes into the slot's sendAnswer straight from the read buffer, and the latency is one
// sample appended to the run's stats.

// windowSlot is one send of the async window.
type windowSlot struct {
	p     *rawProducer
	w     *sendWindow
	s     *sendSlot
	start time.Time // when the send in flight was queued
}

// sendWindow is what the slots of one run share.
type sendWindow struct {
	stop  <-chan struct{}
	live  sync.WaitGroup   // slots not retired
	retry chan *windowSlot // slots refused from a callback; room for every slot
}

// runWindow sends until stop or the run's message count, with -inflight sends in flight.
func (p *rawProducer) runWindow(stop <-chan struct{}) {
	w := &sendWindow{stop: stop, retry: make(chan *windowSlot, p.cfg.Inflight)}
	w.live.Add(p.cfg.Inflight)
	for i := 0; i < p.cfg.Inflight; i++ {
		(&windowSlot{p: p, w: w, s: p.newSlot()}).send(false, time.Now())
	}
	retired := make(chan struct{})
	go func() {
		w.live.Wait()
		close(retired)
	}()
	for {
		select {
		case ws := <-w.retry:
			ws.send(false, time.Now())
		case <-retired:
			return
		}
	}
}

// send sends the slot's next message at now, or retires the slot. From a callback, a refused
// send hands the slot to the run goroutine; from the run goroutine, it tries the next message.
// Once InvokeAsync accepted a send the slot belongs to its callback, which may already run.
func (ws *windowSlot) send(fromCallback bool, now time.Time) {
	p := ws.p
	for first := true; ; first = false {
		select {
		case <-ws.w.stop:
			ws.w.live.Done()
			return
		default:
		}
		if !p.st.ticket(p.cfg.N) {
			ws.w.live.Done()
			return
		}
		if !first {
			now = time.Now()
		}
		addr := p.requestAt(ws.s, now)
		ws.s.answer.queueOffset = -1
		ws.start = now
		var dec remoting.ExtDecoder = &ws.s.answer
		if p.mapPath {
			dec = nil
		}
		err := p.cli.InvokeAsync(addr, ws.s.req, dec, now.Add(p.cfg.SendTimeout), ws)
		if err == nil {
			return
		}
		p.st.sendDone("", 0, err)
		if fromCallback {
			ws.w.retry <- ws
			return
		}
	}
}

// InvokeDone records the answer to the slot's send and sends its next message. One clock
// read serves both: the answer's arrival ends the latency, and the next send starts then.
func (ws *windowSlot) InvokeDone(resp *remoting.Command, err error) {
	now := time.Now()
	if err != nil {
		ws.p.st.sendDone("", 0, err)
	} else {
		if ws.p.mapPath {
			for k, v := range resp.ExtFields {
				ws.s.answer.DecodeExt([]byte(k), []byte(v))
			}
			resp.ReleaseExt()
		}
		status, err := ws.s.status(resp)
		ws.p.st.sendDone(status, now.Sub(ws.start), err)
	}
	ws.send(true, now)
}
