package broker

import (
	"strconv"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
)

type queueKey struct {
	topic   string
	queueID int32
}

// holdService is long polling: a pull that found nothing is parked per queue until the
// dispatcher adds a unit to that queue (store.OnDispatch) or its hold time runs out, then the
// pull runs again and is answered. One goroutine serves every held request.
type holdService struct {
	b       *Broker
	mu      sync.Mutex
	held    map[queueKey][]*pullRequest
	count   int
	pending map[queueKey]struct{}
	signal  chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
	tick    time.Duration
}

func newHoldService(b *Broker) *holdService {
	return &holdService{
		b: b, held: map[queueKey][]*pullRequest{}, pending: map[queueKey]struct{}{},
		signal: make(chan struct{}, 1), done: make(chan struct{}), tick: 50 * time.Millisecond,
	}
}

func (h *holdService) start() {
	h.wg.Add(1)
	go h.run()
}

func (h *holdService) stop() {
	select {
	case <-h.done:
	default:
		close(h.done)
	}
	h.wg.Wait()
}

// hold parks pr. A message dispatched between the read and this call is caught by the check
// after registration.
func (h *holdService) hold(pr *pullRequest) {
	k := queueKey{pr.topic, pr.queueID}
	h.mu.Lock()
	h.held[k] = append(h.held[k], pr)
	h.count++
	h.mu.Unlock()
	h.b.metrics.pullHeld(pr.w)
	if h.b.store.QueueMaxOffset(pr.topic, pr.queueID) > pr.offset {
		h.notify(pr.topic, pr.queueID, 0)
	}
}

// notify is the store's dispatch callback; it only records the queue, the service goroutine
// does the reading.
func (h *holdService) notify(topic string, queueID int32, _ int64) {
	k := queueKey{topic, queueID}
	h.mu.Lock()
	if _, ok := h.held[k]; !ok {
		h.mu.Unlock()
		return
	}
	h.pending[k] = struct{}{}
	h.mu.Unlock()
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

func (h *holdService) heldCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

func (h *holdService) run() {
	defer h.wg.Done()
	t := time.NewTicker(h.tick)
	defer t.Stop()
	for {
		select {
		case <-h.done:
			h.answerAll()
			return
		case <-h.signal:
			h.wake()
		case <-t.C:
			h.expire(h.b.now())
		}
	}
}

// wake re-runs the held pulls of every queue that got new units.
func (h *holdService) wake() {
	h.mu.Lock()
	keys := h.pending
	h.pending = map[queueKey]struct{}{}
	h.mu.Unlock()
	for k := range keys {
		max := h.b.store.QueueMaxOffset(k.topic, k.queueID)
		var ready []*pullRequest
		h.mu.Lock()
		list := h.held[k]
		kept := list[:0]
		for _, pr := range list {
			if max > pr.offset {
				ready = append(ready, pr)
			} else {
				kept = append(kept, pr)
			}
		}
		h.setList(k, kept)
		h.mu.Unlock()
		h.b.metrics.pullsWoken(len(ready), false)
		for _, pr := range ready {
			h.b.executePull(pr, false)
		}
	}
}

// expire answers held pulls whose time ran out or whose connection closed.
func (h *holdService) expire(now time.Time) {
	var due []*pullRequest
	h.mu.Lock()
	for k, list := range h.held {
		kept := list[:0]
		for _, pr := range list {
			closed := pr.w.Conn() != nil && pr.w.Conn().Context().Err() != nil
			if closed {
				continue
			}
			if !now.Before(pr.deadline) {
				due = append(due, pr)
			} else {
				kept = append(kept, pr)
			}
		}
		h.setList(k, kept)
	}
	h.mu.Unlock()
	h.b.metrics.pullsWoken(len(due), true)
	for _, pr := range due {
		h.b.executePull(pr, false)
	}
}

// setList stores a queue's remaining held requests; the caller holds mu.
func (h *holdService) setList(k queueKey, kept []*pullRequest) {
	old := len(h.held[k])
	if len(kept) == 0 {
		delete(h.held, k)
	} else {
		h.held[k] = kept
	}
	h.count -= old - len(kept)
}

// answerAll answers everything still held with PULL_NOT_FOUND at its offset (shutdown).
func (h *holdService) answerAll() {
	h.mu.Lock()
	all := h.held
	h.held = map[queueKey][]*pullRequest{}
	h.count = 0
	h.mu.Unlock()
	for _, list := range all {
		for _, pr := range list {
			resp := newPullNotFound(pr)
			if pr.w.Write(resp) == nil {
				h.b.lateAnswers.Add(1)
			}
		}
	}
}

func newPullNotFound(pr *pullRequest) *remoting.Command {
	resp := remoting.NewResponse(pr.req, remoting.PullNotFound, "broker is shutting down")
	resp.ExtFields["nextBeginOffset"] = strconv.FormatInt(pr.offset, 10)
	resp.ExtFields["minOffset"] = "0"
	resp.ExtFields["maxOffset"] = "0"
	resp.ExtFields["suggestWhichBrokerId"] = "0"
	return resp
}
