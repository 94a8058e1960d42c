package timer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEntryRoundTrip(t *testing.T) {
	es := []Entry{{Slot: 1764595200000, QueueOffset: 7, PhysOffset: 123456, Size: 300}, {}, {Slot: 1 << 62, QueueOffset: 1 << 40, PhysOffset: 1 << 50, Size: 1 << 30}, {Slot: 2000, QueueOffset: 9, PhysOffset: 77, Size: 250, Marker: true}}
	var b []byte
	for _, e := range es {
		b = AppendEntry(b, e)
	}
	require.Len(t, b, len(es)*EntrySize)
	got, bad, torn := DecodeEntries(append(b, 1, 2, 3))
	require.Equal(t, es, got)
	require.Zero(t, bad)
	require.Equal(t, 3, torn)

	b[EntrySize+5] ^= 1 // the second entry's CRC no longer matches: skipped, the others kept
	got, bad, _ = DecodeEntries(b)
	require.Equal(t, []Entry{es[0], es[2], es[3]}, got)
	require.Equal(t, 1, bad)
	_, err := DecodeEntry(b[:10])
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestCheckpointRoundTrip(t *testing.T) {
	c := Checkpoint{SyncedOffset: 40, WrittenOffset: 42, Cursor: 1764595201000, Done: 41}
	b := AppendCheckpoint(nil, c)
	require.Len(t, b, CheckpointSize)
	got, err := DecodeCheckpoint(b)
	require.NoError(t, err)
	require.Equal(t, c, got)
	for i := range b {
		d := append([]byte(nil), b...)
		d[i] ^= 0x10
		_, err := DecodeCheckpoint(d)
		if i >= 44 { // the padding after the CRC is not read
			continue
		}
		require.ErrorIs(t, err, ErrCorrupt, "byte %d", i)
	}
	_, err = DecodeCheckpoint(AppendCheckpoint(nil, Checkpoint{SyncedOffset: 5, WrittenOffset: 4}))
	require.ErrorIs(t, err, ErrCorrupt, "written before synced")
	_, err = DecodeCheckpoint(b[:47])
	require.ErrorIs(t, err, ErrCorrupt)
}

func FuzzEntry(f *testing.F) {
	f.Add(AppendEntry(nil, Entry{Slot: 1000, QueueOffset: 1, PhysOffset: 2, Size: 3}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		es, bad, torn := DecodeEntries(b)
		require.Equal(t, len(b), (len(es)+bad)*EntrySize+torn)
		for _, e := range es {
			back, err := DecodeEntry(AppendEntry(nil, e))
			require.NoError(t, err)
			require.Equal(t, e, back)
		}
	})
}

func FuzzCheckpoint(f *testing.F) {
	f.Add(AppendCheckpoint(nil, Checkpoint{SyncedOffset: 5, WrittenOffset: 6, Cursor: 9000, Done: -1}))
	f.Add([]byte("RQTM"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCheckpoint(b)
		if err != nil {
			return
		}
		back, err := DecodeCheckpoint(AppendCheckpoint(nil, c))
		require.NoError(t, err)
		require.Equal(t, c, back)
	})
}
