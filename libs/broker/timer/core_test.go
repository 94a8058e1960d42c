package timer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCoreDeliversInSlotOrderNeverEarly(t *testing.T) {
	c := NewCore(1000, 10_000, 100_000, -1)
	b, need := c.NeedLoad()
	require.True(t, need)
	require.Equal(t, int64(100_000), b)
	c.Load(b, []Entry{{Slot: 103_000, QueueOffset: 2}, {Slot: 101_000, QueueOffset: 1}, {Slot: 101_000, QueueOffset: 0}, {Slot: 101_000, QueueOffset: 1}})
	require.Equal(t, 3, c.InMemory(), "an entry indexed twice is kept once")
	require.Empty(t, c.Due(101_999, 10), "slot 101000 fires at 102000")
	require.Equal(t, int64(102_000), c.NextDue())
	due := c.Due(102_000, 10)
	require.Equal(t, []Entry{{Slot: 101_000, QueueOffset: 0}, {Slot: 101_000, QueueOffset: 1}}, due)
	for _, e := range due {
		c.Delivered(e)
	}
	c.Advance(102_500)
	require.Equal(t, int64(102_000), c.Cursor())
	// A late timer is indexed under the cursor's slot and fires at the next boundary.
	require.Equal(t, int64(102_000), c.Slot(50_000))
	c.Add(Entry{Slot: c.Slot(50_000), QueueOffset: 3})
	require.Equal(t, []Entry{{Slot: 102_000, QueueOffset: 3}}, c.Due(103_000, 10))
	c.Advance(103_000)
	require.Equal(t, int64(103_000), c.Cursor(), "stops at the pending slot 103000")
	require.Len(t, c.Due(104_000, 10), 1)
	c.Advance(125_000)
	require.Equal(t, int64(110_000), c.Cursor(), "not out of the loaded bucket")
	_, need = c.NeedLoad()
	require.True(t, need)
}

func TestCoreLoadDropsDelivered(t *testing.T) {
	c := NewCore(1000, 10_000, 105_000, -1)
	c.Load(100_000, []Entry{{Slot: 104_000, QueueOffset: 1}, {Slot: 105_000, QueueOffset: 2}, {Slot: 106_000, QueueOffset: 3}})
	require.Equal(t, 2, c.InMemory(), "slots before the cursor are delivered; the cursor's own slot is delivered again")
	d := NewCore(1000, 10_000, 105_000, 2)
	d.Load(100_000, []Entry{{Slot: 105_000, QueueOffset: 2}, {Slot: 105_000, QueueOffset: 4}, {Slot: 106_000, QueueOffset: 3}})
	require.Equal(t, 2, d.InMemory(), "in the cursor's slot, entries up to its done offset are delivered")
	c.Add(Entry{Slot: 120_000, QueueOffset: 9})
	require.Equal(t, 2, c.InMemory(), "entries of later buckets stay on disk")
}

func TestCoreObserveAndSkip(t *testing.T) {
	c := NewCore(1000, 10_000, 0, -1)
	c.Observe(55_500, 7)
	require.Equal(t, int64(55_000), c.Cursor())
	require.Equal(t, int64(7), c.Done())
	c.Observe(55_000, 3)
	require.Equal(t, int64(7), c.Done(), "never backwards within the slot")
	c.Observe(10_000, 9)
	require.Equal(t, int64(55_000), c.Cursor(), "never backwards")
	c.SkipTo(90_000, 70_400)
	require.Equal(t, int64(70_000), c.Cursor(), "not past now")
	c.SkipTo(80_000, 99_000)
	require.Equal(t, int64(80_000), c.Cursor())
}

func TestCoreKeepsMarkersOfTheCursorsSlot(t *testing.T) {
	c := NewCore(1000, 10_000, 100_000, -1)
	c.Load(100_000, []Entry{
		{Slot: 101_000, QueueOffset: 0},
		{Slot: 101_000, QueueOffset: 1, Marker: true},
		{Slot: 102_000, QueueOffset: 2, Marker: true},
		{Slot: 101_000, QueueOffset: 3},
	})
	require.Equal(t, []Entry{{Slot: 101_000, QueueOffset: 1, Marker: true}}, c.Markers(101_000))
	require.Equal(t, 1, c.MarkerCount(102_000))
	require.Zero(t, c.MarkerCount(103_000))
	due := c.Due(102_000, 10)
	require.Len(t, due, 3, "markers go through the heap in queue offset order")
	require.True(t, due[1].Marker)
	for _, e := range due {
		c.Delivered(e)
	}
	require.Len(t, c.Markers(101_000), 1, "kept while the cursor is in their slot")
	c.Advance(102_500)
	require.Equal(t, int64(102_000), c.Cursor())
	require.Zero(t, c.MarkerCount(101_000), "dropped once the cursor leaves their slot")

	// A restart inside the slot after the marker (done = 1): the marker is not due again but
	// still names what it cancels for the timer after it.
	d := NewCore(1000, 10_000, 101_000, 1)
	d.Load(100_000, []Entry{{Slot: 101_000, QueueOffset: 1, Marker: true}, {Slot: 101_000, QueueOffset: 3}})
	require.Equal(t, 1, d.InMemory())
	require.Len(t, d.Markers(101_000), 1)
	// A late marker is indexed under the cursor's slot like any late entry.
	d.Add(Entry{Slot: d.Slot(50_000), QueueOffset: 4, Marker: true})
	require.Equal(t, 2, d.MarkerCount(101_000))
}
