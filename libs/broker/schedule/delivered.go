package schedule

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/rmqha/rmqha/libs/commitlog"
)

// PropertyDelaySource is set on every delivered copy: "<level>:<queue offset>" of the
// scheduled record it came from. The delivered copies are in the CommitLog, so a replica that
// dispatches them knows how far each level delivered, even when the delay offsets it holds
// (delayOffset.json, synced by metadata) are older: a promoted slave resumes after the last
// delivery it replicated instead of delivering those messages a second time.
const PropertyDelaySource = "DELAY_SOURCE"

// Delivered tracks, per level, the next queue offset after the highest delivery seen in the
// log (by the dispatcher, through TagsCodeObserving). Safe for concurrent use.
type Delivered struct {
	next []atomic.Int64 // index level-1
}

// NewDelivered tracks levels 1..len(l).
func NewDelivered(l Levels) *Delivered { return &Delivered{next: make([]atomic.Int64, len(l))} }

// Next is the queue offset after the last delivery of level seen (0 when none).
func (d *Delivered) Next(level int) int64 {
	if d == nil || level < 1 || level > len(d.next) {
		return 0
	}
	return d.next[level-1].Load()
}

// Observe records a delivered copy's source; other messages are ignored.
func (d *Delivered) Observe(props commitlog.Props) {
	if d == nil {
		return
	}
	v, ok := props.Get(PropertyDelaySource)
	if !ok {
		return
	}
	ls, os, ok := strings.Cut(v, ":")
	if !ok {
		return
	}
	level, err1 := strconv.Atoi(ls)
	off, err2 := strconv.ParseInt(os, 10, 64)
	if err1 != nil || err2 != nil || level < 1 || level > len(d.next) || off < 0 {
		return
	}
	n := &d.next[level-1]
	for {
		cur := n.Load()
		if off+1 <= cur || n.CompareAndSwap(cur, off+1) {
			return
		}
	}
}

func deliverySource(level int, qoff int64) string {
	return strconv.Itoa(level) + ":" + strconv.FormatInt(qoff, 10)
}

// TagsCodeObserving is TagsCode that also feeds d with every delivered copy dispatched.
func TagsCodeObserving(l Levels, d *Delivered) func(topic string, props commitlog.Props, storeTimestamp int64) int64 {
	tc := TagsCode(l)
	return func(topic string, props commitlog.Props, storeTimestamp int64) int64 {
		d.Observe(props)
		return tc(topic, props, storeTimestamp)
	}
}
