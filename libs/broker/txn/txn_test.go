package txn

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/stretchr/testify/require"
)

func TestOpBodyRoundTrip(t *testing.T) {
	for _, off := range []int64{0, 1, 42, 1 << 40} {
		got, err := DecodeOpBody(AppendOpBody(nil, off))
		require.NoError(t, err)
		require.Equal(t, []int64{off}, got)
	}
	got, err := DecodeOpBody([]byte("3,5,8"))
	require.NoError(t, err)
	require.Equal(t, []int64{3, 5, 8}, got)
	for _, bad := range []string{"", ",", "1,", "-1", "x", "1,,2", "99999999999999999999"} {
		_, err := DecodeOpBody([]byte(bad))
		require.ErrorIs(t, err, ErrBadOpBody, bad)
	}
}

func FuzzDecodeOpBody(f *testing.F) {
	f.Add([]byte("12"))
	f.Add([]byte("1,2,3"))
	f.Fuzz(func(t *testing.T, b []byte) {
		offs, err := DecodeOpBody(b)
		if err != nil {
			return
		}
		var enc []byte
		for i, o := range offs {
			if i > 0 {
				enc = append(enc, ',')
			}
			enc = AppendOpBody(enc, o)
		}
		again, err := DecodeOpBody(enc)
		require.NoError(t, err)
		require.Equal(t, offs, again)
	})
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	c := DefaultConfig()
	c.CheckMax = 0
	require.ErrorIs(t, c.Validate(), ErrInvalidConfig)
}

const sec = int64(1000)

func half(off, bornMs, storeMs int64, checks int) Half {
	return Half{QueueOffset: off, BornTimestamp: bornMs, StoreTimestamp: storeMs, CheckTimes: checks}
}

func TestCheckerDecide(t *testing.T) {
	c := NewChecker(DefaultConfig(), 0, 0)
	now := 100 * sec
	// Younger than transactionTimeOut: the round ends there.
	require.Equal(t, Wait, c.Decide(half(0, now-5*sec, now-5*sec, 0), now, now))
	// Old enough: checked.
	require.Equal(t, Check, c.Decide(half(0, now-7*sec, now-7*sec, 0), now, now))
	// Stored during the round (a copy made by it): wait.
	require.Equal(t, Wait, c.Decide(half(0, now-7*sec, now, 1), now, now))
	// Checked transactionCheckMax times: discarded.
	require.Equal(t, Discard, c.Decide(half(0, now-70*sec, now-7*sec, 15), now, now))
	// Born in the future: checked at once.
	require.Equal(t, Check, c.Decide(half(0, now+sec, now-sec, 0), now, now))
	// Immunity longer than the timeout holds the check; shorter does not shorten it.
	h := half(0, now-7*sec, now-7*sec, 0)
	h.Immunity = 10 * time.Second
	require.Equal(t, Wait, c.Decide(h, now, now))
	h.Immunity = time.Second
	require.Equal(t, Check, c.Decide(h, now, now))
}

func TestCheckerOpsResolveAndProgress(t *testing.T) {
	c := NewChecker(DefaultConfig(), 0, 0)
	now := 100 * sec
	// Ops for halves 1 and 0 (out of order), then one naming a half already behind.
	c.AddOp(0, []int64{1}, "", now)
	c.AddOp(1, []int64{0}, "", now)
	require.True(t, c.Resolved(0, "", now))
	require.True(t, c.Resolved(1, "", now))
	require.False(t, c.Resolved(2, "", now))
	require.Equal(t, Skip, c.Decide(half(0, 0, 0, 0), now, now))
	c.Pass(0)
	h, op := c.Progress()
	require.Equal(t, int64(1), h)
	require.Equal(t, int64(0), op, "op 0 names half 1, not passed yet")
	c.Pass(1)
	h, op = c.Progress()
	require.Equal(t, int64(2), h)
	require.Equal(t, int64(2), op)
	// An op for a half behind the scan is done at once.
	c.AddOp(2, []int64{0}, "", now)
	_, op = c.Progress()
	require.Equal(t, int64(3), op)
	require.Equal(t, int64(3), c.OpRead())
	// Behind the scan and resolved: resolved for END_TRANSACTION.
	require.True(t, c.Resolved(1, "", now))
	// Passed unresolved (checked or discarded): still open for the answer to its check,
	// until KeyWindow; resolved once answered.
	c.PassOpen(3, now)
	require.False(t, c.Resolved(3, "", now))
	require.True(t, c.Resolved(3, "", now+DefaultConfig().KeyWindow.Milliseconds()))
	c.MarkResolved(3, "", now)
	require.True(t, c.Resolved(3, "", now))
	// An op record carrying a key resolves the other halves of that transaction (a check
	// copy made again after a restart).
	c.AddOp(3, []int64{5}, "K", now)
	require.True(t, c.Resolved(10, "K", now))
}

func TestCheckerMarkResolvedAndKeys(t *testing.T) {
	c := NewChecker(DefaultConfig(), 5, 0)
	now := 100 * sec
	c.MarkResolved(7, "K1", now)
	require.True(t, c.Resolved(7, "", now))
	// Another half of the same transaction (a check copy): resolved by the key.
	require.True(t, c.Resolved(9, "K1", now))
	require.Equal(t, Skip, c.Decide(Half{QueueOffset: 9, Key: "K1"}, now, now+1))
	// The op record of the resolution arrives: it replaces the placeholder.
	c.AddOp(0, []int64{7}, "", now)
	c.PassTo(8)
	h, op := c.Progress()
	require.Equal(t, int64(8), h)
	require.Equal(t, int64(1), op)
	// Keys expire after KeyWindow.
	require.False(t, c.Resolved(9, "K1", now+DefaultConfig().KeyWindow.Milliseconds()))
}

func TestCheckerBounds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxOpsAhead, cfg.MaxKeys = 2, 2
	c := NewChecker(cfg, 0, 0)
	c.AddOp(0, []int64{10}, "", 0)
	require.True(t, c.CanReadOps())
	c.AddOp(1, []int64{11}, "", 0)
	require.False(t, c.CanReadOps())
	for i, k := range []string{"a", "b", "c"} {
		c.MarkResolved(-1, k, int64(i))
	}
	require.False(t, c.Resolved(100, "a", 3), "oldest key forgotten beyond MaxKeys")
	require.True(t, c.Resolved(100, "c", 3))
	// Multi-offset op bodies: done once every named half is passed.
	c2 := NewChecker(DefaultConfig(), 0, 0)
	c2.AddOp(0, []int64{0, 2}, "", 0)
	c2.PassTo(1)
	_, op := c2.Progress()
	require.Equal(t, int64(0), op)
	c2.PassTo(3)
	_, op = c2.Progress()
	require.Equal(t, int64(1), op)
	c2.SkipOps(5)
	_, op = c2.Progress()
	require.Equal(t, int64(5), op)
}

func TestMessagesRoundTrip(t *testing.T) {
	props := map[string]string{"TAGS": "tagA", "KEYS": "k1", PropTranMsg: "true", PropUniqKey: "U1", "WAIT": "true"}
	m := &commitlog.Message{Topic: "T", QueueID: 3, Flag: 7, Body: []byte("body"), SysFlag: TypePrepared | 0x1,
		BornTimestamp: 1234, BornHost: netip.MustParseAddrPort("10.0.0.1:5000"), ReconsumeTimes: 2}
	require.True(t, IsHalfSend(props, 0))
	require.True(t, IsHalfSend(nil, TypePrepared))
	require.False(t, IsHalfSend(map[string]string{PropTranMsg: "false"}, 0))
	require.NoError(t, ToHalf(m, props, "PG"))
	require.Equal(t, HalfTopic, m.Topic)
	require.Equal(t, int32(0), m.QueueID)
	require.Equal(t, int32(0x1), m.SysFlag)
	p := commitlog.ParseProperties(m.Properties)
	require.Equal(t, "T", p[PropRealTopic])
	require.Equal(t, "3", p[PropRealQueueID])
	require.Equal(t, "PG", p[PropProducerGroup])

	rec := &commitlog.Record{Topic: m.Topic, QueueID: 0, QueueOffset: 4, PhysicalOffset: 9000, Flag: m.Flag, Body: m.Body,
		Properties: m.Properties, SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost,
		StoreTimestamp: 2000, StoreHost: netip.MustParseAddrPort("10.0.0.2:10911"), ReconsumeTimes: 2}
	c, err := Restore(rec)
	require.NoError(t, err)
	require.Equal(t, "T", c.Topic)
	require.Equal(t, int32(3), c.QueueID)
	require.Equal(t, TypeCommit|0x1, c.SysFlag)
	require.Equal(t, int64(9000), c.PreparedTransactionOffset)
	cp := commitlog.ParseProperties(c.Properties)
	require.Equal(t, map[string]string{"TAGS": "tagA", "KEYS": "k1", PropUniqKey: "U1", PropProducerGroup: "PG"}, cp)

	cc, err := CheckCopy(rec)
	require.NoError(t, err)
	require.Equal(t, "1", commitlog.ParseProperties(cc.Properties)[PropCheckTimes])
	rec.Properties = cc.Properties
	require.Equal(t, 1, HalfOf(rec).CheckTimes)

	body, err := CheckBody(nil, rec)
	require.NoError(t, err)
	back, n, err := commitlog.DecodeRecord(body)
	require.NoError(t, err)
	require.Equal(t, len(body), n)
	require.Equal(t, "T", back.Topic)
	require.Equal(t, int32(3), back.QueueID)
	require.Equal(t, int64(4), back.QueueOffset)
	require.Equal(t, int64(9000), back.PhysicalOffset)

	rec.Topic = "T"
	_, err = Restore(rec)
	require.ErrorIs(t, err, ErrNotHalf)
	op := OpMessage(4, "U1")
	offs, err := DecodeOpBody(op.Body)
	require.NoError(t, err)
	require.Equal(t, []int64{4}, offs)
}
