package txn

import (
	"strconv"
	"time"
)

// Checker is the pure state of the check-back service for the one half queue
// (RMQ_SYS_TRANS_HALF_TOPIC queue 0) and its op queue (RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0).
// It does no I/O and reads no clock: the driver feeds it op records and scanned halves with
// explicit times and carries out the actions it returns.
//
//	half queue:  ... | h0 | h1 | h2 | h3 | h4 | ...      halfNext: next half to decide
//	                        ^halfNext
//	op queue:    ... | o0 | o1 | o2 | ...                opDone: every op below is done
//	                   ^opDone     ^opRead               opRead: next op to read
//
// An op record names the half offsets it resolves. One naming a half at or beyond halfNext is
// kept in removed until the scan passes that half; one naming only halves behind halfNext is
// done. opDone moves over the contiguous run of done op records, as RocketMQ's
// calculateOpOffset does. halfNext and opDone are the progress kept in the consumer offset
// table under CID_RMQ_SYS_TRANS; everything else is rebuilt by reading the op queue again.
type Checker struct {
	cfg      Config
	halfNext int64
	opDone   int64
	opRead   int64
	removed  map[int64]int64 // half offset -> op queue offset (-1: written here, not read yet)
	pending  map[int64]int   // op queue offset -> halves it names not yet passed
	done     map[int64]struct{}
	keys     map[string]int64 // UNIQ_KEY -> ms resolved
	keyOrder []keyAt
	// open holds halves the scan passed unresolved (checked or discarded), with when: an
	// END_TRANSACTION naming one still counts (the producer's answer to an earlier check).
	open      map[int64]int64
	openOrder []int64
}

type keyAt struct {
	key string
	at  int64
}

// Action is what the driver does with a scanned half.
type Action int

const (
	// Skip: resolved (an op record names it, or its transaction key was resolved); pass it.
	Skip Action = iota
	// Wait: too young to check (or stored after the round began); end the round here.
	Wait
	// Check: append a copy with TRANSACTION_CHECK_TIMES+1 to the half queue, send
	// CHECK_TRANSACTION_STATE for the copy to a producer of the group, pass the half.
	Check
	// Discard: checked CheckMax times already; store it in TRANS_CHECK_MAX_TIME_TOPIC and pass it.
	Discard
)

func (a Action) String() string {
	switch a {
	case Skip:
		return "skip"
	case Wait:
		return "wait"
	case Check:
		return "check"
	case Discard:
		return "discard"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// Half is what the Checker needs of a scanned half message.
type Half struct {
	QueueOffset    int64
	BornTimestamp  int64 // ms
	StoreTimestamp int64 // ms
	// CheckTimes is TRANSACTION_CHECK_TIMES (0 when absent).
	CheckTimes int
	// Immunity is CHECK_IMMUNITY_TIME_IN_SECONDS as a duration, 0 when absent or unparsable.
	Immunity time.Duration
	// Key is UNIQ_KEY ("" when absent).
	Key string
}

// NewChecker starts from saved progress: the next half queue offset to decide and the op
// queue offset below which every op record is done.
func NewChecker(cfg Config, halfNext, opDone int64) *Checker {
	return &Checker{
		cfg: cfg, halfNext: max(halfNext, 0), opDone: max(opDone, 0), opRead: max(opDone, 0),
		removed: map[int64]int64{}, pending: map[int64]int{}, done: map[int64]struct{}{},
		keys: map[string]int64{}, open: map[int64]int64{},
	}
}

// Progress returns the state to persist: next half queue offset, op queue done offset.
func (c *Checker) Progress() (halfNext, opDone int64) { return c.halfNext, c.opDone }

// OpRead is the next op queue offset to read.
func (c *Checker) OpRead() int64 { return c.opRead }

// CanReadOps reports whether more op records may be taken now (MaxOpsAhead).
func (c *Checker) CanReadOps() bool { return len(c.removed) < c.cfg.MaxOpsAhead }

// Removed is how many resolved halves the scan has not reached yet.
func (c *Checker) Removed() int { return len(c.removed) }

// AddOp records the op record at op queue offset opOff naming halves (nil: unreadable, done)
// and, when it carries one, the transaction key it resolved (remembered from nowMs). Op
// records are fed in queue order; one below OpRead is ignored.
func (c *Checker) AddOp(opOff int64, halves []int64, key string, nowMs int64) {
	if opOff < c.opRead {
		return
	}
	c.opRead = opOff + 1
	c.rememberKey(key, nowMs)
	n := 0
	for _, h := range halves {
		if h < c.halfNext {
			continue
		}
		if _, dup := c.removed[h]; dup && c.removed[h] >= 0 {
			continue // a second op for the same half: the first one counts
		}
		c.removed[h] = opOff
		n++
	}
	if n == 0 {
		c.markDone(opOff)
		return
	}
	c.pending[opOff] = n
}

// SkipOps moves the op reader to next (entries removed by retention): nothing to learn there.
func (c *Checker) SkipOps(next int64) {
	for o := c.opRead; o < next; o++ {
		c.markDone(o)
	}
	c.opRead = max(c.opRead, next)
}

// MarkResolved records that an op record for half offset h (and the transaction key) was
// just written, before the op reader sees it: a repeated END_TRANSACTION finds it at once.
func (c *Checker) MarkResolved(h int64, key string, nowMs int64) {
	if h >= c.halfNext {
		if _, ok := c.removed[h]; !ok {
			c.removed[h] = -1
		}
	}
	delete(c.open, h)
	c.rememberKey(key, nowMs)
}

// Unresolve undoes MarkResolved when the records it announced could not be written.
func (c *Checker) Unresolve(h int64, key string) {
	if op, ok := c.removed[h]; ok && op < 0 {
		delete(c.removed, h)
	}
	if key != "" {
		delete(c.keys, key)
	}
}

// Resolved reports whether the half at queue offset h is no longer open for END_TRANSACTION:
// an op record names it, its transaction key was resolved, or the scan passed it resolved.
// A half the scan passed unresolved (checked: a copy at a later offset now stands for it; or
// discarded) stays open for KeyWindow, so the producer's answer to its check still counts;
// after that (or beyond MaxKeys such halves) it counts as resolved: an answer that late is
// dropped rather than risk a second delivery.
func (c *Checker) Resolved(h int64, key string, nowMs int64) bool {
	if _, ok := c.removed[h]; ok {
		return true
	}
	if c.keyResolved(key, nowMs) {
		return true
	}
	if h < c.halfNext {
		at, open := c.open[h]
		return !open || nowMs-at >= c.cfg.KeyWindow.Milliseconds()
	}
	return false
}

// PassOpen moves the scan past the half at h left unresolved (Check or Discard).
func (c *Checker) PassOpen(h int64, nowMs int64) {
	c.Pass(h)
	for len(c.openOrder) > 0 {
		first := c.openOrder[0]
		at, ok := c.open[first]
		if ok && nowMs-at < c.cfg.KeyWindow.Milliseconds() && len(c.open) < c.cfg.MaxKeys {
			break
		}
		delete(c.open, first)
		c.openOrder = c.openOrder[1:]
	}
	if len(c.openOrder) == 0 {
		c.openOrder = nil
	}
	c.open[h] = nowMs
	c.openOrder = append(c.openOrder, h)
}

// Decide says what to do with the half at h.QueueOffset == the next offset to decide, for a
// round that began at roundStartMs, now nowMs. Skip is followed by Pass, Check and Discard
// by PassOpen.
func (c *Checker) Decide(h Half, nowMs, roundStartMs int64) Action {
	if _, ok := c.removed[h.QueueOffset]; ok || h.QueueOffset < c.halfNext || c.keyResolved(h.Key, nowMs) {
		return Skip
	}
	if h.CheckTimes >= c.cfg.CheckMax {
		return Discard
	}
	if h.StoreTimestamp >= roundStartMs {
		return Wait // stored during this round (the copies it makes among them)
	}
	age := nowMs - h.BornTimestamp
	if age < 0 {
		return Check // born in the future: a producer clock ahead; RocketMQ checks at once
	}
	if age < c.Timeout(h).Milliseconds() {
		return Wait
	}
	return Check
}

// Timeout is the age at which h is checked: TransactionTimeout, or its immunity when longer
// (TransactionalMessageUtil.getImmunityTime).
func (c *Checker) Timeout(h Half) time.Duration {
	return max(h.Immunity, c.cfg.TransactionTimeout)
}

// Pass moves the scan past the half at h (decided, or unreadable and skipped).
func (c *Checker) Pass(h int64) { c.PassTo(h + 1) }

// PassTo moves the scan to next (entries before it removed by retention or unreadable).
func (c *Checker) PassTo(next int64) {
	for h := c.halfNext; h < next; h++ {
		op, ok := c.removed[h]
		if !ok {
			continue
		}
		delete(c.removed, h)
		if op < 0 {
			continue
		}
		if c.pending[op]--; c.pending[op] <= 0 {
			delete(c.pending, op)
			c.markDone(op)
		}
	}
	c.halfNext = max(c.halfNext, next)
}

func (c *Checker) markDone(op int64) {
	if op < c.opDone {
		return
	}
	c.done[op] = struct{}{}
	for {
		if _, ok := c.done[c.opDone]; !ok {
			return
		}
		delete(c.done, c.opDone)
		c.opDone++
	}
}

func (c *Checker) rememberKey(key string, nowMs int64) {
	if key == "" {
		return
	}
	c.pruneKeys(nowMs)
	if _, ok := c.keys[key]; ok {
		return
	}
	c.keys[key] = nowMs
	c.keyOrder = append(c.keyOrder, keyAt{key, nowMs})
	for len(c.keys) > c.cfg.MaxKeys {
		c.dropOldestKey()
	}
}

func (c *Checker) keyResolved(key string, nowMs int64) bool {
	if key == "" {
		return false
	}
	at, ok := c.keys[key]
	return ok && nowMs-at < c.cfg.KeyWindow.Milliseconds()
}

func (c *Checker) pruneKeys(nowMs int64) {
	for len(c.keyOrder) > 0 && nowMs-c.keyOrder[0].at >= c.cfg.KeyWindow.Milliseconds() {
		c.dropOldestKey()
	}
}

func (c *Checker) dropOldestKey() {
	k := c.keyOrder[0]
	c.keyOrder[0] = keyAt{}
	c.keyOrder = c.keyOrder[1:]
	if at, ok := c.keys[k.key]; ok && at == k.at {
		delete(c.keys, k.key)
	}
	if len(c.keyOrder) == 0 {
		c.keyOrder = nil
	}
}
