package commitlog

import (
	"errors"
	"time"
)

const (
	dispatchChunk = 1 << 20
	dispatchPace  = 500 * time.Microsecond
)

// dispatchLoop follows the CommitLog from the dispatched offset and adds
// consume-queue units. It runs the same way behind Append and AppendRaw.
func (s *Store) dispatchLoop() {
	defer s.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	// One pacing timer for every pass (time.After would allocate one per pass).
	pace := time.NewTimer(dispatchPace)
	defer pace.Stop()
	var lastErr error
	for {
		select {
		case <-s.dispatchReq:
		case <-t.C:
		case <-s.stopCh:
			return
		}
		// A read-only store still dispatches what it holds, so that
		// earlier data stays consumable.
		if err := s.dispatchAvailable(); err != nil && err != lastErr {
			s.log.WithError(err).Error("dispatch failed")
			lastErr = err
		}
		// Pace passes (as RocketMQ's reput service does) so that a busy
		// log is dispatched in batches, not one pass per record.
		pace.Reset(dispatchPace)
		select {
		case <-pace.C:
		case <-s.stopCh:
			return
		}
	}
}

// pendingUnits are the consume-queue units of one run of consecutive queue offsets of one
// queue, gathered by a dispatch pass before they are written in one cqPut.
type pendingUnits struct {
	cq    *consumeQueue
	q0    int64
	units []byte
}

// maxKeptPending bounds the runs whose slices dispatchBytes keeps for its next pass (a pass
// over many queues allocates again rather than holding memory for them all).
const maxKeptPending = 256

// maxKeptUnits bounds the bytes of units a kept run holds on to (3276 units).
const maxKeptUnits = 64 << 10

// dispatchAvailable dispatches every complete record below MaxOffset.
func (s *Store) dispatchAvailable() error {
	s.dispatchMu.Lock()
	defer s.dispatchMu.Unlock()
	return s.dispatchLocked()
}

func (s *Store) dispatchLocked() error {
	for {
		d := s.dispatched.Load()
		max := s.maxOffset.Load()
		if d >= max {
			return nil
		}
		if min := s.minOffset.Load(); d < min {
			d = min
			s.dispatched.Store(d)
		}
		end := s.segEnd(d)
		if end > max {
			end = max
		}
		if end-d > dispatchChunk {
			end = d + dispatchChunk
		}
		if cap(s.dispatchBuf) < dispatchChunk {
			s.dispatchBuf = make([]byte, dispatchChunk)
		}
		buf := s.dispatchBuf[:end-d]
		if err := s.readAt(buf, d); err != nil {
			if errors.Is(err, ErrOffsetTooOld) {
				continue
			}
			return err
		}
		if len(buf) >= 8 {
			size := int64(int32(be32(buf)))
			if magic := int32(be32(buf[4:])); magic != MagicBlank && size > int64(len(buf)) && d+size <= max && d+size <= s.segEnd(d) {
				// One record larger than the chunk: read it whole.
				big := make([]byte, size)
				if err := s.readAt(big, d); err != nil {
					return err
				}
				buf = big
			}
		}
		n, err := s.dispatchBytes(d, buf)
		if err != nil || n == 0 {
			return err
		}
	}
}

// dispatchBytes adds the consume-queue units and index entries of the whole
// records in buf, which holds the CommitLog from offset d, and advances the
// dispatched offset past them. It returns how many bytes it dispatched (0
// when buf starts with a partial record).
func (s *Store) dispatchBytes(d int64, buf []byte) (int, error) {
	r := s.startRun(d)
	defer s.endRun(r)
	p, err := s.collectRun(r, buf, nil)
	if err != nil || p == 0 {
		return 0, err
	}
	if err := s.commitRun(r); err != nil {
		return 0, err
	}
	return p, nil
}

// dispatchRun is a dispatch pass over consecutive records, possibly collected from more
// than one buffer (the crash scan hands over one cache-sized run after another), whose
// units are written and whose end is published once, by commitRun.
type dispatchRun struct {
	start, end int64 // the records collected are [start, end)
	pend       []pendingUnits
	byCQ       bool // whether s.dbyCQ indexes pend
}

// startRun begins a run at d (dispatchMu held). The runs and the map are the Store's, reused
// from pass to pass: a pass allocated about one object every two records for them.
func (s *Store) startRun(d int64) *dispatchRun {
	r := &s.drun
	r.start, r.end, r.pend, r.byCQ = d, d, s.dpend[:0], false
	return r
}

// endRun gives the run's scratch back to the Store.
func (s *Store) endRun(r *dispatchRun) {
	for i := range r.pend {
		r.pend[i].cq = nil // no queue is kept alive by the scratch slices
		if cap(r.pend[i].units) > maxKeptUnits {
			r.pend[i].units = nil
		}
	}
	if cap(r.pend) <= maxKeptPending {
		s.dpend = r.pend[:0]
	}
	if r.byCQ {
		clear(s.dbyCQ) // only a pass over many queues filled it
	}
	r.pend, r.byCQ = nil, false
}

// collectRun adds the whole records at the start of buf, which holds the CommitLog from
// r.end, to the run: their units to r.pend, their keys to the index. metas, when not nil,
// are the records' parseMeta results, in order. It returns how many bytes it took (0 when
// buf starts with a partial record).
func (s *Store) collectRun(r *dispatchRun, buf []byte, metas []recordMeta) (int, error) {
	d := r.end
	pend := r.pend
	defer func() { r.pend = pend }()
	p := 0
	for p < len(buf) {
		var m recordMeta
		if len(metas) > 0 {
			m, metas = metas[0], metas[1:]
		} else {
			var err error
			m, err = parseMeta(buf[p:])
			if errors.Is(err, ErrIncomplete) {
				break // a partial record at the tail: wait for the rest
			}
			if err != nil {
				return 0, s.setReadOnly(s.corruptAt(d+int64(p), "dispatcher: "+err.Error()))
			}
		}
		if m.blank {
			p = int(s.segEnd(d+int64(p)) - d)
			break
		}
		if s.idx != nil {
			_ = s.idx.indexRecord(&m, d+int64(p)) // a failure stops the index, not the log
		}
		if isDispatchable(m.sysFlag) {
			var cq *consumeQueue
			i := -1
			// Most batches touch few queues: a linear scan beats a map, and it finds the
			// queue of a record whose queue the pass has seen without the queues' lock.
			if len(pend) <= 8 {
				for j := range pend {
					if c := pend[j].cq; c.qid == m.queueID && c.topic == string(m.topic) {
						i, cq = j, c
					}
				}
				if cq == nil {
					cq = s.getOrCreateCQ(m.topic, m.queueID)
				}
			} else {
				cq = s.getOrCreateCQ(m.topic, m.queueID)
				if !r.byCQ {
					if s.dbyCQ == nil {
						s.dbyCQ = make(map[*consumeQueue]int, len(pend))
					}
					for j := range pend {
						s.dbyCQ[pend[j].cq] = j
					}
					r.byCQ = true
				}
				if j, ok := s.dbyCQ[cq]; ok {
					i = j
				}
			}
			if i >= 0 && pend[i].q0+int64(len(pend[i].units)/CQUnitSize) != m.queueOffset {
				i = -1
			}
			if i < 0 {
				i = len(pend)
				if i < cap(pend) {
					pend = pend[:i+1]
					pend[i].cq, pend[i].q0, pend[i].units = cq, m.queueOffset, pend[i].units[:0]
				} else {
					pend = append(pend, pendingUnits{cq: cq, q0: m.queueOffset})
				}
				if r.byCQ {
					s.dbyCQ[cq] = i
				}
			}
			var u [CQUnitSize]byte
			putUnit(u[:], cqUnit{phys: d + int64(p), size: m.size, tags: s.tagsCode(cq.topic, &m)})
			pend[i].units = append(pend[i].units, u[:]...)
		}
		p += int(m.size)
	}
	r.end = d + int64(p)
	return p, nil
}

// commitRun writes the run's units, publishes its end as the dispatched offset and tells
// the OnDispatch callbacks. The run is empty afterwards and goes on from its end.
func (s *Store) commitRun(r *dispatchRun) error {
	pend := r.pend
	for i := range pend {
		if err := s.cqPut(pend[i].cq, pend[i].q0, pend[i].units); err != nil {
			return s.setReadOnly(err)
		}
	}
	if s.idx != nil {
		_ = s.idx.advance(r.end)
	}
	s.dispatched.Store(r.end)
	if len(pend) > 0 {
		s.cbMu.RLock()
		fns := s.onDispatch
		s.cbMu.RUnlock()
		for i := range pend {
			seen := false
			for j := range pend[:i] {
				seen = seen || pend[j].cq == pend[i].cq
			}
			if seen {
				continue
			}
			_, qmax := pend[i].cq.bounds()
			for _, fn := range fns {
				fn(pend[i].cq.topic, pend[i].cq.qid, qmax)
			}
		}
	}
	for i := range pend {
		pend[i].cq = nil
	}
	r.pend = pend[:0]
	if r.byCQ {
		clear(s.dbyCQ)
		r.byCQ = false
	}
	r.start = r.end
	return nil
}

// tagsCode is the record's consume-queue tags code; topic is its queue's
// (already allocated) topic name.
func (s *Store) tagsCode(topic string, m *recordMeta) int64 {
	if s.cfg.TagsCode != nil {
		return s.cfg.TagsCode(topic, Props(m.props), m.storeTimestamp)
	}
	if m.propsRead {
		return m.tags
	}
	h, _ := Props(m.props).JavaHash(PropertyTags)
	return int64(h)
}

// WaitDispatched blocks until every record below offset is in the consume
// queues, the deadline passes, or the store fails.
func (s *Store) WaitDispatched(offset int64, deadline time.Time) error {
	for {
		if s.dispatched.Load() >= offset {
			return nil
		}
		if s.closed.Load() {
			return ErrClosed
		}
		if !s.cfg.Now().Before(deadline) {
			return ErrDispatchTimeout
		}
		notify(s.dispatchReq)
		time.Sleep(200 * time.Microsecond)
	}
}
