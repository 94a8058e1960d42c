package commitlog

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

func TestAppendReadBasic(t *testing.T) {
	fs := vfs.NewMem()
	s := openStore(t, testConfig(fs))
	defer s.Close()
	r0 := mustAppend(t, s, msg("T", 0, "hello", "TagA"))
	r1 := mustAppend(t, s, msg("T", 0, "world", ""))
	r2 := mustAppend(t, s, msg("T", 1, "other", ""))
	require.Equal(t, int64(0), r0.WroteOffset)
	require.Equal(t, r0.EndOffset, r1.WroteOffset)
	require.Equal(t, int64(0), r0.QueueOffset)
	require.Equal(t, int64(1), r1.QueueOffset)
	require.Equal(t, int64(0), r2.QueueOffset)
	require.Equal(t, OffsetMsgID(s.cfg.StoreHost, r1.WroteOffset), r1.MsgID)
	require.Equal(t, r2.EndOffset, s.MaxOffset())

	rec, err := s.ReadRecord(r1.WroteOffset)
	require.NoError(t, err)
	d, _, err := DecodeRecord(rec)
	require.NoError(t, err)
	require.Equal(t, "world", string(d.Body))
	require.Equal(t, "T", d.Topic)
	require.Equal(t, r1.WroteOffset, d.PhysicalOffset)
	require.Equal(t, int64(1), d.QueueOffset)
	require.Equal(t, s.cfg.StoreHost, d.StoreHost)
	require.Equal(t, r1.StoreTimestamp, d.StoreTimestamp)

	waitDispatched(t, s)
	g := s.GetMessages("T", 0, 0, 32, 1<<20, nil)
	require.Equal(t, Found, g.Status)
	require.Len(t, g.Records, 2)
	require.Equal(t, "hello", bodyOf(t, g.Records[0]))
	require.Equal(t, int64(2), g.NextBeginOffset)
	require.Equal(t, int64(2), s.QueueMaxOffset("T", 0))
	require.Equal(t, map[string][]int32{"T": {0, 1}}, s.Queues())

	// tag filter
	code := int64(JavaStringHash("TagA"))
	g = s.GetMessages("T", 0, 0, 32, 1<<20, func(c int64) bool { return c == code })
	require.Equal(t, Found, g.Status)
	require.Len(t, g.Records, 1)
	require.Equal(t, int64(2), g.NextBeginOffset)
	g = s.GetMessages("T", 0, 1, 32, 1<<20, func(c int64) bool { return c == code })
	require.Equal(t, NoMatchedMessage, g.Status)
	require.Equal(t, int64(2), g.NextBeginOffset)
}

func TestSegmentRollWithBlankPadding(t *testing.T) {
	fs := vfs.NewMem()
	cfg := testConfig(fs)
	s := openStore(t, cfg)
	body := strings.Repeat("x", 1000)
	var res []AppendResult
	for i := 0; i < 30; i++ {
		res = append(res, mustAppend(t, s, msg("T", 0, body, "")))
	}
	for _, r := range res {
		require.Equal(t, r.WroteOffset/cfg.SegmentSize, (r.EndOffset-1)/cfg.SegmentSize, "record split across segments")
	}
	// The record after a roll starts at a segment boundary, and ReadRaw
	// returns the padding up to the boundary.
	var rolled AppendResult
	for i := 1; i < len(res); i++ {
		if res[i].WroteOffset != res[i-1].EndOffset {
			rolled = res[i]
			require.Equal(t, int64(0), rolled.WroteOffset%cfg.SegmentSize)
			raw, err := s.ReadRaw(res[i-1].EndOffset, 1<<20)
			require.NoError(t, err)
			require.Equal(t, int(rolled.WroteOffset-res[i-1].EndOffset), len(raw))
			rec, _, err := DecodeRecord(raw)
			require.NoError(t, err)
			require.True(t, rec.IsBlank())
			break
		}
	}
	require.NotZero(t, rolled.WroteOffset)
	names, err := fs.List("/store/commitlog")
	require.NoError(t, err)
	require.Equal(t, "00000000000000000000", names[0])
	require.Equal(t, "00000000000000008192", names[1])
	// ReadRaw never crosses a segment end and returns whole records.
	raw, err := s.ReadRaw(0, 1<<20)
	require.NoError(t, err)
	require.Equal(t, int(cfg.SegmentSize), len(raw))
	raw, err = s.ReadRaw(0, 2500)
	require.NoError(t, err)
	require.Equal(t, 2*int(res[0].WroteBytes), len(raw))
	raw, err = s.ReadRaw(0, 10)
	require.NoError(t, err)
	require.Equal(t, int(res[0].WroteBytes), len(raw), "at least one whole record")
	require.NoError(t, s.Close())

	// Reopen: clean recovery keeps everything.
	s = openStore(t, cfg)
	defer s.Close()
	require.True(t, s.Recovery().Clean)
	require.Equal(t, res[len(res)-1].EndOffset, s.MaxOffset())
	var got []string
	for off := int64(0); off < 30; {
		g := s.GetMessages("T", 0, off, 100, 1<<30, nil)
		require.Equal(t, Found, g.Status)
		for _, r := range g.Records {
			got = append(got, bodyOf(t, r))
		}
		off = g.NextBeginOffset
	}
	require.Equal(t, 30, len(got))
	r := mustAppend(t, s, msg("T", 0, "after", ""))
	require.Equal(t, int64(30), r.QueueOffset)
}

func TestBadInputExactErrors(t *testing.T) {
	cfg := testConfig(vfs.NewMem())
	cfg.MaxMessageSize = 1000
	cfg.SegmentSize = 64 << 10
	s := openStore(t, cfg)
	defer s.Close()
	cases := []struct {
		m    *Message
		want error
	}{
		{msg("T", 0, strings.Repeat("b", 1001), ""), ErrMessageTooLarge},
		{msg("", 0, "x", ""), ErrTopicEmpty},
		{msg(strings.Repeat("t", 128), 0, "x", ""), ErrTopicTooLong},
		{msg("bad topic", 0, "x", ""), ErrTopicInvalid},
		{msg("bad/topic", 0, "x", ""), ErrTopicInvalid},
		{msg("T", -1, "x", ""), ErrQueueIDInvalid},
		{&Message{Topic: "T", Properties: strings.Repeat("p", 32768)}, ErrPropertiesTooLarge},
		{&Message{Topic: "T", Properties: "TAGS\x01a"}, ErrPropertiesInvalid},
		{&Message{Topic: "T", Properties: "TAGS\x01a\x00\x02"}, ErrPropertiesInvalid},
	}
	for _, c := range cases {
		_, err := s.Append(c.m)
		require.ErrorIs(t, err, c.want)
	}
	// A body within MaxMessageSize that cannot fit one segment.
	cfg2 := testConfig(vfs.NewMem())
	s2 := openStore(t, cfg2)
	defer s2.Close()
	_, err := s2.Append(msg("T", 0, strings.Repeat("b", int(cfg2.SegmentSize)), ""))
	require.ErrorIs(t, err, ErrMessageTooLarge)
	_, err = s2.AppendBatch([]*Message{msg("T", 0, "a", ""), msg("T", 1, "b", "")})
	require.ErrorIs(t, err, ErrBatchMixed)
	require.Equal(t, int64(0), s2.MaxOffset())
	_, err = s.Append(&Message{Topic: "T", Properties: strings.Repeat("p", 32766) + "\x02"})
	require.NoError(t, err)

	// Checking a message allocates nothing, whatever the length of its properties (a copy of
	// them into bytes was one allocation per send above 32 bytes).
	long := &Message{Topic: "T", Properties: "UNIQ_KEY\x017F0000010001000000000000000A\x02TAGS\x01a\x02WAIT\x01true\x02"}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = s.validate(long) }))
	for _, p := range []string{"", "\x02", "a\x01b", "a\x01b\x02", "a\x01\x00b\x02", "\x00", long.Properties} {
		require.Equal(t, validProps([]byte(p)), validPropsString(p), "%q", p)
	}
}

func TestAppendBatch(t *testing.T) {
	s := openStore(t, testConfig(vfs.NewMem()))
	defer s.Close()
	mustAppend(t, s, msg("T", 2, "first", ""))
	res, err := s.AppendBatch([]*Message{msg("T", 2, "a", ""), msg("T", 2, "b", ""), msg("T", 2, "c", "")})
	require.NoError(t, err)
	for i, r := range res {
		require.Equal(t, int64(1+i), r.QueueOffset)
		if i > 0 {
			require.Equal(t, res[i-1].EndOffset, r.WroteOffset)
		}
	}
	waitDispatched(t, s)
	g := s.GetMessages("T", 2, 1, 2, 1<<20, nil)
	require.Equal(t, Found, g.Status)
	require.Len(t, g.Records, 2)
	require.Equal(t, int64(3), g.NextBeginOffset)
	require.Equal(t, "b", bodyOf(t, g.Records[1]))
}

func TestGetMessagesStatuses(t *testing.T) {
	s := openStore(t, testConfig(vfs.NewMem()))
	defer s.Close()
	g := s.GetMessages("none", 0, 5, 32, 1<<20, nil)
	require.Equal(t, NoMatchedLogicQueue, g.Status)
	require.Equal(t, int64(0), g.NextBeginOffset)
	for i := 0; i < 5; i++ {
		mustAppend(t, s, msg("T", 0, bodyN(i), ""))
	}
	waitDispatched(t, s)
	g = s.GetMessages("T", 0, 5, 32, 1<<20, nil)
	require.Equal(t, OffsetOverflowOne, g.Status)
	require.Equal(t, int64(5), g.NextBeginOffset)
	g = s.GetMessages("T", 0, 9, 32, 1<<20, nil)
	require.Equal(t, OffsetOverflowBadly, g.Status)
	require.Equal(t, int64(0), g.NextBeginOffset, "min is 0: corrected to min")
	g = s.GetMessages("T", 0, 3, 1, 1<<20, nil)
	require.Equal(t, Found, g.Status)
	require.Equal(t, int64(4), g.NextBeginOffset)
	require.Equal(t, int64(0), g.MinOffset)
	require.Equal(t, int64(5), g.MaxOffset)
	// maxBytes limits but always returns one message.
	g = s.GetMessages("T", 0, 0, 32, 1, nil)
	require.Len(t, g.Records, 1)
	require.Equal(t, int64(1), g.NextBeginOffset)
	for _, st := range []GetStatus{Found, OffsetTooSmall, NoMatchedLogicQueue} {
		require.NotEmpty(t, st.String())
	}
}

func TestOffsetByTimeAndEarliest(t *testing.T) {
	var now atomic.Int64
	now.Store(1_000_000)
	cfg := testConfig(vfs.NewMem())
	cfg.Now = func() time.Time { return time.UnixMilli(now.Load()) }
	s := openStore(t, cfg)
	defer s.Close()
	for i := 0; i < 40; i++ {
		now.Store(1_000_000 + int64(i)*10)
		mustAppend(t, s, msg("T", 0, bodyN(i), ""))
	}
	waitDispatched(t, s)
	require.Equal(t, int64(0), s.OffsetByTime("T", 0, 0))
	require.Equal(t, int64(7), s.OffsetByTime("T", 0, 1_000_070))
	require.Equal(t, int64(8), s.OffsetByTime("T", 0, 1_000_071))
	require.Equal(t, int64(40), s.OffsetByTime("T", 0, 2_000_000))
	ts, err := s.EarliestMessageTime("T", 0)
	require.NoError(t, err)
	require.Equal(t, int64(1_000_000), ts)
	_, err = s.EarliestMessageTime("X", 0)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestCloseThenUse(t *testing.T) {
	s := openStore(t, testConfig(vfs.NewMem()))
	require.NoError(t, s.Close())
	_, err := s.Append(msg("T", 0, "x", ""))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, s.Close(), ErrClosed)
	_, err = s.ReadRecord(0)
	require.True(t, errors.Is(err, ErrClosed))
}

func TestReadRawSmallMaxBytesBeforePadding(t *testing.T) {
	cfg := testConfig(vfs.NewMem())
	s := openStore(t, cfg)
	defer s.Close()
	var res []AppendResult
	for i := 0; i < 12; i++ {
		res = append(res, mustAppend(t, s, msg("T", 0, strings.Repeat("p", 1000), "")))
	}
	var last AppendResult
	for i := 1; i < len(res); i++ {
		if res[i].WroteOffset != res[i-1].EndOffset {
			last = res[i-1]
			break
		}
	}
	require.NotZero(t, last.EndOffset)
	// Enough for the last record and part of the padding: only the record.
	raw, err := s.ReadRaw(last.WroteOffset, int(last.WroteBytes)+20)
	require.NoError(t, err)
	require.Equal(t, int(last.WroteBytes), len(raw))
	// The padding alone is returned whole even when larger than maxBytes.
	raw, err = s.ReadRaw(last.EndOffset, 10)
	require.NoError(t, err)
	require.Equal(t, int(cfg.SegmentSize-last.EndOffset%cfg.SegmentSize), len(raw))
}
