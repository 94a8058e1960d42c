package commitlog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// TestReplicationVerifiedPath copies a log the way the HA link does with the
// store's fast path (ReadRawInto into one reused buffer, AppendRawVerified, then
// DispatchRaw from the received bytes) and checks that the copy, its consume
// queues and their tags codes equal the master's, across segment ends.
func TestReplicationVerifiedPath(t *testing.T) {
	master := openStore(t, testConfig(vfs.NewMem()))
	defer master.Close()
	replica := openStore(t, testConfig(vfs.NewMem()))
	defer replica.Close()
	for i := 0; i < 80; i++ {
		mustAppend(t, master, msg("T", int32(i%3), strings.Repeat("v", 100+i*7), "tag"+bodyN(i%5)))
	}
	var buf []byte
	reads := 0
	for replica.MaxOffset() < master.MaxOffset() {
		off := replica.MaxOffset()
		data, err := master.ReadRawInto(buf[:0], off, 1500)
		require.NoError(t, err)
		require.NotEmpty(t, data)
		if reads > 0 && cap(buf) >= len(data) {
			require.Same(t, &buf[:1][0], &data[:1][0], "the buffer is reused")
		}
		if cap(data) > cap(buf) {
			buf = data[:0]
		}
		reads++
		require.NoError(t, replica.AppendRawVerified(off, data))
		replica.DispatchRaw(off, data)
	}
	require.Greater(t, reads, 10)
	waitDispatched(t, replica)
	waitDispatched(t, master)
	for off := int64(0); off < master.MaxOffset(); off += master.SegmentSize() {
		a, err := master.ReadRaw(off, 1<<20)
		require.NoError(t, err)
		b, err := replica.ReadRaw(off, 1<<20)
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), "segment at %d differs", off)
	}
	for q := int32(0); q < 3; q++ {
		require.Equal(t, master.QueueMaxOffset("T", q), replica.QueueMaxOffset("T", q))
		for _, tag := range []string{"tag" + bodyN(1), "tag" + bodyN(4)} {
			code := int64(JavaStringHash(tag))
			match := func(c int64) bool { return c == code }
			g1 := master.GetMessages("T", q, 0, 64, 1<<20, match)
			g2 := replica.GetMessages("T", q, 0, 64, 1<<20, match)
			require.NotEmpty(t, g1.Records)
			require.Equal(t, g1.Records, g2.Records)
		}
	}
}

// TestAppendRawVerifiedChecksFramingOnly: the verified path trusts the caller's
// CRC for the body bytes (the HA Data frame's CRC covered the hop) and still
// refuses anything whose framing is wrong, with the same errors as AppendRaw.
func TestAppendRawVerifiedChecksFramingOnly(t *testing.T) {
	master := openStore(t, testConfig(vfs.NewMem()))
	defer master.Close()
	for i := 0; i < 3; i++ {
		mustAppend(t, master, msg("T", 0, bodyN(i), ""))
	}
	data, err := master.ReadRaw(0, 1<<20)
	require.NoError(t, err)
	r, n, err := DecodeRecord(data)
	require.NoError(t, err)
	bodyAt := bytes.Index(data[:n], r.Body)
	require.Positive(t, bodyAt)

	flipped := append([]byte(nil), data...)
	flipped[bodyAt] ^= 0x40
	a := openStore(t, testConfig(vfs.NewMem()))
	defer a.Close()
	require.ErrorIs(t, a.AppendRaw(0, flipped), ErrCorrupt, "AppendRaw checks body CRCs")
	require.Zero(t, a.MaxOffset())
	require.NoError(t, a.AppendRawVerified(0, flipped), "AppendRawVerified leaves the body to the caller's CRC")
	got, err := a.ReadRawInto(nil, 0, 1<<20)
	require.NoError(t, err, "ReadRawInto does not re-check body CRCs")
	require.Equal(t, flipped, got)
	_, err = a.ReadRaw(0, 1<<20)
	require.ErrorIs(t, err, ErrCorrupt, "ReadRaw does")

	b := openStore(t, testConfig(vfs.NewMem()))
	defer b.Close()
	require.ErrorIs(t, b.AppendRawVerified(0, data[:len(data)-3]), ErrCorrupt, "partial record")
	require.ErrorIs(t, b.AppendRawVerified(b.SegmentSize(), data), ErrCorrupt, "physical offsets")
	require.ErrorIs(t, b.AppendRawVerified(100, data), ErrOffsetMismatch)
	badMagic := append([]byte(nil), data...)
	badMagic[4] ^= 0xff
	require.NoError(t, b.Reset(0))
	require.ErrorIs(t, b.AppendRawVerified(0, badMagic), ErrCorrupt, "magic")
	require.NoError(t, b.AppendRawVerified(0, data))
	b.DispatchRaw(0, data)
	waitDispatched(t, b)
	require.Equal(t, int64(3), b.QueueMaxOffset("T", 0))
}
