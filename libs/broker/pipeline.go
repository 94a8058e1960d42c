package broker

import (
	"sync"

	"github.com/rmqha/rmqha/libs/hawire"
)

// sendPipeline answers stored sends whose flush or replication wait is pending. One goroutine
// takes them in arrival order: end offsets grow with arrival and deadlines are fixed at arrival,
// so by the time the oldest completes most of those behind it have completed too, and no
// goroutine is parked per send.
type sendPipeline struct {
	b      *Broker
	mu     sync.Mutex
	queue  []*pendingSend
	signal chan struct{}
	done   chan struct{}
	wg     sync.WaitGroup
}

func newSendPipeline(b *Broker) *sendPipeline {
	return &sendPipeline{b: b, signal: make(chan struct{}, 1), done: make(chan struct{})}
}

func (p *sendPipeline) start() {
	p.wg.Add(1)
	go p.run()
}

// stop answers what is queued (the waits complete: the store and HA master close their waiters
// with errors) and stops the goroutine.
func (p *sendPipeline) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
}

func (p *sendPipeline) add(ps *pendingSend) {
	select {
	case <-p.done:
		// Stopped (shutdown): a send stored just before still gets its answer.
		go p.wait(ps)
		return
	default:
	}
	p.mu.Lock()
	p.queue = append(p.queue, ps)
	p.mu.Unlock()
	select {
	case p.signal <- struct{}{}:
	default:
	}
}

func (p *sendPipeline) take() []*pendingSend {
	p.mu.Lock()
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	return q
}

func (p *sendPipeline) run() {
	defer p.wg.Done()
	for {
		batch := p.take()
		for _, ps := range batch {
			p.wait(ps)
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-p.signal:
		case <-p.done:
			// Drain whatever arrived before the stop.
			for _, ps := range p.take() {
				p.wait(ps)
			}
			return
		}
	}
}

func (p *sendPipeline) wait(ps *pendingSend) {
	if ps.ready {
		p.b.writeAnswer(ps.w, ps.ans.command())
		return
	}
	var flushErr error
	if ps.flush != nil {
		flushErr = <-ps.flush
		p.b.metrics.flushWaited(ps.arrival)
	}
	var repl hawire.ReplStatus
	have := false
	if ps.repl != nil {
		repl, have = <-ps.repl
		if !have {
			repl, have = hawire.ReplTimeout, true
		}
		if !ps.replCounted {
			p.b.metrics.replWaited(ps.arrival, repl)
		}
	}
	p.b.finish(ps, flushErr, repl, have)
}
