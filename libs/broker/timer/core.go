package timer

import (
	"container/heap"
	"sort"
)

// Core is the pure timer state machine: it decides which slot a timer is indexed under,
// which index bucket must be in memory, which timers are due at a given time and how far the
// delivery cursor moves. It does no I/O and reads no clock; the Service feeds it the time,
// the index contents and the outcome of each delivery.
//
// Time is divided into slots of P ms (timerPrecisionMs); a timer whose TIMER_OUT_MS lies in
// slot K fires once now >= K+P, which is never before the time the client asked for
// (Transform rounds the requested time down, as RocketMQ does). Slots are grouped in buckets
// of Span ms, one index file each. Only the bucket holding the cursor is in memory.
//
// The cursor (C, D) means: every slot before C is delivered, and in slot C every entry up to
// queue offset D. Delivery goes slot by slot, in queue offset order within a slot, and the
// cursor moves to each delivered timer, then on to the next due boundary once nothing before
// it is left. A timer indexed after its slot
// has passed the cursor is indexed under the cursor's slot instead (late, delivered in the
// next round).
//
// Delete markers (Entry.Marker, RocketMQ 5's TIMER_DEL_UNIQKEY) are entries like any other:
// they go through the heap in order and move the cursor, but are never stored. The caller
// asks Markers for the markers of a slot before storing any timer of it: a timer whose key a
// marker of its slot names is cancelled. The markers of the cursor's slot are kept even when
// the cursor has passed them (a restart inside the slot), so that a marker indexed before its
// timer still cancels it.
type Core struct {
	p, span int64
	cursor  int64
	done    int64 // highest queue offset delivered in the cursor's slot, -1 for none
	bucket  int64 // start of the bucket in memory, -1 for none
	h       entryHeap
	seen    map[int64]struct{}        // queue offsets in the loaded bucket: an entry indexed twice is delivered once
	markers map[int64]map[int64]Entry // slot -> queue offset -> delete marker, for slots from the cursor's on
}

// NewCore returns a core with precision p ms, bucket span ms (a multiple of p) and the
// cursor and done offset from a checkpoint. Arguments are validated by Config.Validate.
func NewCore(p, span, cursor, done int64) *Core {
	c := &Core{p: p, span: span, bucket: -1, done: -1}
	c.cursor = c.slotOf(max(cursor, 0))
	if c.cursor == cursor {
		c.done = max(done, -1)
	}
	return c
}

// Done is the highest queue offset delivered in the cursor's slot, -1 for none: delivery
// within a slot goes in queue offset order, so every entry of the slot up to it is done.
func (c *Core) Done() int64 { return c.done }

// moveTo sets the cursor to slot (later than the cursor) with done delivered in it.
func (c *Core) moveTo(slot, done int64) {
	c.cursor, c.done = slot, done
	for s := range c.markers {
		if s < slot {
			delete(c.markers, s)
		}
	}
}

// delivered reports whether an entry is behind the cursor.
func (c *Core) delivered(e Entry) bool {
	return e.Slot < c.cursor || (e.Slot == c.cursor && e.QueueOffset <= c.done)
}

func (c *Core) slotOf(ms int64) int64 {
	if ms < 0 {
		return 0
	}
	return ms / c.p * c.p
}

// BucketOf is the start of the bucket holding slot.
func (c *Core) BucketOf(slot int64) int64 { return max(slot, 0) / c.span * c.span }

// Cursor is the first slot not known to be fully delivered.
func (c *Core) Cursor() int64 { return c.cursor }

// OwnSlot is the slot TIMER_OUT_MS out lies in.
func (c *Core) OwnSlot(out int64) int64 { return c.slotOf(out) }

// Slot is the slot a timer with TIMER_OUT_MS out is indexed under: its own, or the cursor's
// when its own has passed.
func (c *Core) Slot(out int64) int64 { return max(c.slotOf(out), c.cursor) }

// Observe moves the cursor to a delivered entry (slot, queue offset) when it is later: a
// replica learns from the delivered copies it replicates how far its master got. The loaded
// bucket is dropped when the cursor leaves it.
func (c *Core) Observe(slot, qoff int64) {
	slot = c.slotOf(slot)
	switch {
	case slot > c.cursor:
		c.moveTo(slot, qoff)
	case slot == c.cursor && qoff > c.done:
		c.done = qoff
	default:
		return
	}
	if c.bucket >= 0 && c.cursor >= c.bucket+c.span {
		c.Unload()
	} else if c.bucket >= 0 {
		c.dropBefore()
	}
}

// NeedLoad reports the bucket that must be loaded (Load) before Due can hand out timers.
func (c *Core) NeedLoad() (bucket int64, need bool) {
	if c.bucket >= 0 {
		return 0, false
	}
	return c.BucketOf(c.cursor), true
}

// Load puts the entries of the cursor's bucket in memory: entries before the cursor are
// delivered already, and an entry indexed twice (the same queue offset) is kept once. It
// returns how many entries it kept.
func (c *Core) Load(bucket int64, entries []Entry) int {
	c.bucket = bucket
	c.h = c.h[:0]
	c.seen = make(map[int64]struct{}, len(entries))
	c.markers = nil
	for _, e := range entries {
		c.Add(e)
	}
	return len(c.h)
}

// SkipTo moves the cursor forward over buckets known to be empty, to next (the start of the
// next bucket with an index file) but not past now's boundary. Only without a loaded bucket.
func (c *Core) SkipTo(next, nowMs int64) {
	if c.bucket >= 0 {
		return
	}
	if t := min(c.slotOf(next), c.slotOf(nowMs)); t > c.cursor {
		c.moveTo(t, -1)
	}
}

// Unload drops the bucket in memory (the next NeedLoad asks for it again).
func (c *Core) Unload() {
	c.bucket = -1
	c.h = c.h[:0]
	c.seen = nil
	c.markers = nil
}

// Add keeps an entry just indexed in memory when it belongs to the loaded bucket.
func (c *Core) Add(e Entry) {
	if c.bucket < 0 || c.BucketOf(e.Slot) != c.bucket {
		return
	}
	if e.Marker && e.Slot >= c.cursor {
		if c.markers == nil {
			c.markers = map[int64]map[int64]Entry{}
		}
		if c.markers[e.Slot] == nil {
			c.markers[e.Slot] = map[int64]Entry{}
		}
		c.markers[e.Slot][e.QueueOffset] = e
	}
	if c.delivered(e) {
		return
	}
	if _, dup := c.seen[e.QueueOffset]; dup {
		return
	}
	c.seen[e.QueueOffset] = struct{}{}
	heap.Push(&c.h, e)
}

// Markers returns the delete markers of slot held in memory (those of the loaded bucket),
// in queue offset order, including those the cursor has passed in its own slot.
func (c *Core) Markers(slot int64) []Entry {
	m := c.markers[slot]
	if len(m) == 0 {
		return nil
	}
	out := make([]Entry, 0, len(m))
	for _, e := range m {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].QueueOffset < out[j].QueueOffset })
	return out
}

// MarkerCount is len(Markers(slot)), without copying.
func (c *Core) MarkerCount(slot int64) int { return len(c.markers[slot]) }

// Due removes and returns, in delivery order, up to limit timers due at nowMs. Each must be
// reported with Delivered once stored; a caller that gives up on them calls Unload so that
// they are read from the index again.
func (c *Core) Due(nowMs int64, limit int) []Entry {
	var out []Entry
	for len(c.h) > 0 && len(out) < limit && c.h[0].Slot+c.p <= nowMs {
		out = append(out, heap.Pop(&c.h).(Entry))
	}
	return out
}

// Delivered records that e is stored in its real topic.
func (c *Core) Delivered(e Entry) {
	switch {
	case e.Slot > c.cursor:
		c.moveTo(e.Slot, e.QueueOffset)
	case e.Slot == c.cursor && e.QueueOffset > c.done:
		c.done = e.QueueOffset
	}
}

// Advance moves the cursor to now's slot boundary when nothing before it is pending, but
// never out of the loaded bucket; leaving the bucket unloads it.
func (c *Core) Advance(nowMs int64) {
	if c.bucket < 0 {
		return
	}
	target := min(c.slotOf(nowMs), c.bucket+c.span)
	if len(c.h) > 0 {
		target = min(target, c.h[0].Slot)
	}
	if target > c.cursor {
		c.moveTo(target, -1)
	}
	if c.cursor >= c.bucket+c.span {
		c.Unload()
	}
}

// NextDue is the time (ms) the next timer in memory is due, or -1 when none is.
func (c *Core) NextDue() int64 {
	if len(c.h) == 0 {
		return -1
	}
	return c.h[0].Slot + c.p
}

// InMemory is the number of timers held in memory.
func (c *Core) InMemory() int { return len(c.h) }

// Loaded is the start of the loaded bucket, -1 for none.
func (c *Core) Loaded() int64 { return c.bucket }

func (c *Core) dropBefore() {
	keep := c.h[:0]
	for _, e := range c.h {
		if !c.delivered(e) {
			keep = append(keep, e)
		} else {
			delete(c.seen, e.QueueOffset)
		}
	}
	c.h = keep
	heap.Init(&c.h)
}

// entryHeap orders entries by slot, then queue offset.
type entryHeap []Entry

func (h entryHeap) Len() int { return len(h) }
func (h entryHeap) Less(i, j int) bool {
	if h[i].Slot != h[j].Slot {
		return h[i].Slot < h[j].Slot
	}
	return h[i].QueueOffset < h[j].QueueOffset
}
func (h entryHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *entryHeap) Push(x any)   { *h = append(*h, x.(Entry)) }
func (h *entryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// sortEntries orders entries as delivery does (for tests and diagnostics).
func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool { return entryHeap(es).Less(i, j) })
}
