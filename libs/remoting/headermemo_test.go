package remoting

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func pairsAlways(int32) bool { return true }

// memoDecode decodes h as a connection's reader does (the memo first, then the full decode
// that records the next one) and reports whether the memo answered.
func memoDecode(t testing.TB, m *headerMemo, arena *stringArena, h []byte) (*Command, bool) {
	t.Helper()
	c := &Command{}
	if m.decode(c, h, pairsAlways, arena) {
		return c, true
	}
	if !decodeJSONHeaderFastRec(c, h, pairsAlways, arena, m) {
		return nil, false
	}
	return c, false
}

// fullDecode is the reference: the fast decode of h alone, into pairs.
func fullDecode(h []byte) (*Command, bool) {
	c := &Command{}
	var arena stringArena
	if !decodeJSONHeaderFastInto(c, h, pairsAlways, &arena) {
		return nil, false
	}
	return c, true
}

func requireSameDecode(t testing.TB, want, got *Command) {
	t.Helper()
	requireSameTop(t, want, got)
	require.Nil(t, got.ExtFields)
	require.NotNil(t, got.pairs)
	require.Equal(t, *want.pairs, *got.pairs, "pairs")
}

// sendHeaderAt is the header rocketmq-client-go writes for its n-th SEND_MESSAGE: the opaque,
// the birth time, the queue and the unique key in the escaped properties change per message.
func sendHeaderAt(n int) []byte {
	return fmt.Appendf(nil, `{"code":10,"language":"GO","version":317,"opaque":%d,"flag":0,"remark":"","extFields":`+
		`{"batch":"false","bname":"broker-a","bornTimestamp":"%d","defaultTopic":"TBW102","defaultTopicQueueNums":"4",`+
		`"flag":"0","maxReconsumeTimes":"16","producerGroup":"pg","properties":"UNIQ_KEY\u0001C0A8000100002A9F%016X\u0002WAIT\u0001true\u0002",`+
		`"queueId":"%d","reconsumeTimes":"0","sysFlag":"0","topic":"TopicTest","unitMode":"false"}}`,
		100000+n, 1795936508414+int64(n)/3, n, n%8)
}

func TestHeaderMemoSendSequence(t *testing.T) {
	var (
		m     headerMemo
		arena stringArena
	)
	const n = 2000
	for i := range n {
		h := sendHeaderAt(i)
		got, _ := memoDecode(t, &m, &arena, h)
		require.NotNil(t, got, "decode %d refused", i)
		want, ok := fullDecode(h)
		require.True(t, ok)
		requireSameDecode(t, want, got)
		v, ok := got.ExtLookup("properties")
		require.True(t, ok)
		require.Contains(t, v, fmt.Sprintf("%016X", i))
		got.releasePairs()
	}
	// Full decodes: the first, one per arena chunk rolled over, none else.
	require.Greater(t, m.hits, uint64(n-n/20), "the memo answered %d of %d headers", m.hits, n)
	require.Equal(t, uint64(n), m.hits+arena.gen, "every header not from the memo came after a new arena chunk")
}

// A kept string is never written again: values read again come from new arena bytes.
func TestHeaderMemoKeepsEarlierStrings(t *testing.T) {
	var (
		m     headerMemo
		arena stringArena
	)
	first, _ := memoDecode(t, &m, &arena, sendHeaderAt(1))
	q1, _ := first.ExtLookup("queueId")
	p1, _ := first.ExtLookup("properties")
	second, fromMemo := memoDecode(t, &m, &arena, sendHeaderAt(2))
	require.True(t, fromMemo)
	q2, _ := second.ExtLookup("queueId")
	require.Equal(t, "1", q1)
	require.Equal(t, "2", q2)
	require.Contains(t, p1, "0000000000000001")
	o1, o2 := first.Opaque, second.Opaque
	require.Equal(t, int32(100001), o1)
	require.Equal(t, int32(100002), o2)
}

// Every change that is not a value of the same extent forgets the memo; the full decode then
// decides, and its answer is the reference's.
func TestHeaderMemoFallsBack(t *testing.T) {
	base := string(sendHeaderAt(7))
	for _, tc := range []struct {
		name, from, to string
	}{
		{"key", `"topic"`, `"topiX"`},
		{"punctuation", `"flag":0,`, `"flag":0 `},
		{"code", `"code":10,`, `"code":11,`},
		{"value ends sooner", `"queueId":"7"`, `"queueId":"""`},
		{"escape swallows the quote", `"queueId":"7"`, `"queueId":"\"`},
		{"number turns fraction", `"flag":0,`, `"flag":.,`},
		{"number of a sign only", `"flag":0,`, `"flag":-,`},
		{"string into number", `"remark":""`, `"remark":12`},
		{"longer", `"queueId":"7"`, `"queueId":"17"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, base, tc.from)
			next := []byte(replaceOnce(base, tc.from, tc.to))
			var (
				m     headerMemo
				arena stringArena
			)
			_, fromMemo := memoDecode(t, &m, &arena, []byte(base))
			require.False(t, fromMemo)
			require.True(t, m.ok, "the send header was not kept")
			got, fromMemo := memoDecode(t, &m, &arena, next)
			require.False(t, fromMemo, "the memo answered %q", next)
			want, ok := fullDecode(next)
			require.Equal(t, ok, got != nil, "full decode %v, through the memo %v", ok, got != nil)
			if ok {
				requireSameDecode(t, want, got)
			}
		})
	}
}

// Headers the memo does not keep, though they decode.
func TestHeaderMemoNotKept(t *testing.T) {
	for name, h := range map[string]string{
		"opaque twice":            `{"code":10,"opaque":1,"opaque":2,"extFields":{"a":"b"}}`,
		"language null and again": `{"code":10,"language":null,"language":"GO","extFields":{"a":"b"}}`,
		"too many pairs":          `{"code":10,"extFields":{` + manyPairs(maxPooledPairs+1) + `}}`,
	} {
		t.Run(name, func(t *testing.T) {
			var (
				m     headerMemo
				arena stringArena
			)
			c, _ := memoDecode(t, &m, &arena, []byte(h))
			require.NotNil(t, c)
			require.False(t, m.ok)
		})
	}
	var (
		m     headerMemo
		arena stringArena
	)
	c := &Command{}
	require.True(t, decodeJSONHeaderFastRec(c, []byte(`{"code":10,"extFields":{"a":"b"}}`), func(int32) bool { return false }, &arena, &m))
	require.False(t, m.ok, "a header decoded into a map is not kept")
}

// A code whose handler stopped being inline is decoded in full again, into a map.
func TestHeaderMemoAsksPairsForAgain(t *testing.T) {
	var (
		m     headerMemo
		arena stringArena
	)
	_, _ = memoDecode(t, &m, &arena, sendHeaderAt(1))
	require.True(t, m.ok)
	require.False(t, m.decode(&Command{}, sendHeaderAt(2), func(int32) bool { return false }, &arena))
}

func TestFirstDiff(t *testing.T) {
	a := bytes.Repeat([]byte("abcdefgh"), 5)
	for i := 0; i <= len(a); i++ {
		b := bytes.Clone(a)
		if i < len(a) {
			b[i] ^= 0x40
		}
		require.Equal(t, i, firstDiff(a, b), "diff at %d", i)
	}
}

func replaceOnce(s, from, to string) string {
	i := bytes.Index([]byte(s), []byte(from))
	return s[:i] + to + s[i+len(from):]
}

func manyPairs(n int) string {
	var b []byte
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `"k`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `":"v"`...)
	}
	return string(b)
}

// FuzzHeaderMemo is the memo's differential target: a header is kept, another of the same
// length (the first with bytes at pos replaced) is decoded through the memo, and whenever the
// memo answers, the full decode of the second header must succeed with the same command.
func FuzzHeaderMemo(f *testing.F) {
	f.Add(sendHeaderAt(3), uint16(40), []byte("9"))
	f.Add(sendHeaderAt(3), uint16(130), []byte("17959365084"))
	f.Add(sendHeaderAt(3), uint16(290), []byte(`\u0003`))
	f.Add(sendHeaderAt(3), uint16(60), []byte(`"`))
	for _, h := range fastHeaders {
		f.Add([]byte(h), uint16(len(h)/2), []byte("0"))
	}
	f.Fuzz(func(t *testing.T, a []byte, pos uint16, repl []byte) {
		if int(pos) > len(a) {
			return
		}
		b := bytes.Clone(a)
		copy(b[pos:], repl)
		var (
			m     headerMemo
			arena stringArena
		)
		c := &Command{}
		if !decodeJSONHeaderFastRec(c, a, pairsAlways, &arena, &m) || !m.ok {
			return
		}
		got := &Command{}
		if !m.decode(got, b, pairsAlways, &arena) {
			return
		}
		want, ok := fullDecode(b)
		if !ok {
			t.Fatalf("the memo decoded what the full decode refuses: %q", b)
		}
		requireSameDecode(t, want, got)
		// And the memo it left answers the same bytes again.
		again := &Command{}
		require.True(t, m.decode(again, b, pairsAlways, &arena))
		requireSameDecode(t, want, again)
	})
}

// BenchmarkDecodeJSONHeaderMemo: a producer's stream of send headers decoded as a connection's
// reader decodes them, through the memo, against the full decode of the same headers in the
// same run.
func BenchmarkDecodeJSONHeaderMemo(b *testing.B) {
	const k = 64
	hs := make([][]byte, k)
	for i := range hs {
		hs[i] = sendHeaderAt(i)
	}
	var (
		m     headerMemo
		arena stringArena
	)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		c := &Command{}
		if !decodeJSONHeaderFastInto(c, hs[i%k], pairsAlways, &arena) {
			b.Fatal("fast path gave up")
		}
		c.releasePairs()
	}
	full := time.Since(start)
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		c, _ := memoDecode(b, &m, &arena, hs[i%k])
		if c == nil {
			b.Fatal("decode refused")
		}
		c.releasePairs()
	}
	memo := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(memo)/float64(full), "x_full_time")
	b.ReportMetric(float64(m.hits)/float64(b.N), "memo_share")
}
