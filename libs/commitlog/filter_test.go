package commitlog

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/stretchr/testify/require"
)

// propA reads property "a" of a stored properties section as an int (-1 when missing).
func propA(props []byte) int {
	for _, pair := range bytes.Split(props, []byte{propPairSep}) {
		if k, v, ok := bytes.Cut(pair, []byte{propNameSep}); ok && string(k) == "a" {
			n, err := strconv.Atoi(string(v))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// filterStore holds n messages in T/0; message i has property a=i, tag TagA for even i and
// TagB for odd i, and body bodyN(i).
func filterStore(t *testing.T, n int) *Store {
	t.Helper()
	cfg := testConfig(vfs.NewMem())
	cfg.SegmentSize = 1 << 20
	cfg.CQUnitsPerFile = 4096 // one consume-queue file: a scan is not cut at a file end
	s := openStore(t, cfg)
	t.Cleanup(func() { _ = s.Close() })
	for i := 0; i < n; i++ {
		m := msg("T", 0, bodyN(i), map[bool]string{true: "TagA", false: "TagB"}[i%2 == 0])
		m.Properties += "a\x01" + strconv.Itoa(i) + "\x02"
		mustAppend(t, s, m)
	}
	waitDispatched(t, s)
	return s
}

func bodies(t *testing.T, recs [][]byte) []string {
	t.Helper()
	out := []string{}
	for _, r := range recs {
		out = append(out, bodyOf(t, r))
	}
	return out
}

// TestGetFilteredLimitsCountAcceptedOnly: with a properties filter, maxMsgs counts the records
// returned, not the ones read; the scan goes on past rejected records, and NextBeginOffset is
// the first unit not examined.
func TestGetFilteredLimitsCountAcceptedOnly(t *testing.T) {
	s := filterStore(t, 100)
	calls := 0
	every3 := func(p []byte) bool { calls++; return propA(p)%3 == 0 }
	g := s.GetFiltered("T", 0, 0, 5, 1<<20, Filter{Properties: every3})
	require.Equal(t, Found, g.Status)
	require.Equal(t, []string{bodyN(0), bodyN(3), bodyN(6), bodyN(9), bodyN(12)}, bodies(t, g.Records))
	require.Equal(t, int64(13), g.NextBeginOffset, "units 0..12 were examined")
	require.Equal(t, 13, calls, "each examined record is evaluated once")

	// The next pull goes on from there.
	g = s.GetFiltered("T", 0, g.NextBeginOffset, 2, 1<<20, Filter{Properties: every3})
	require.Equal(t, []string{bodyN(15), bodyN(18)}, bodies(t, g.Records))
	require.Equal(t, int64(19), g.NextBeginOffset)

	// Without the filter, maxMsgs counts what is read (unchanged behaviour).
	g = s.GetMessages("T", 0, 0, 5, 1<<20, nil)
	require.Len(t, g.Records, 5)
	require.Equal(t, int64(5), g.NextBeginOffset)
}

// TestGetFilteredBytesCountAcceptedOnly: maxBytes counts only returned records too.
func TestGetFilteredBytesCountAcceptedOnly(t *testing.T) {
	s := filterStore(t, 40)
	one := s.GetMessages("T", 0, 10, 1, 1<<20, nil)
	size := len(one.Records[0]) // records 10..39 have the same size (two-digit a)
	odd := func(p []byte) bool { return propA(p)%2 == 1 && propA(p) >= 10 }
	g := s.GetFiltered("T", 0, 10, 32, 3*size, Filter{Properties: odd})
	require.Equal(t, []string{bodyN(11), bodyN(13), bodyN(15)}, bodies(t, g.Records))
	require.Equal(t, int64(16), g.NextBeginOffset)
	// A read-sized limit without the filter would have returned 10, 11, 12 only.
	g = s.GetMessages("T", 0, 10, 32, 3*size, nil)
	require.Len(t, g.Records, 3)
}

// TestGetFilteredNothingMatches: a batch filtered out whole is NoMatchedMessage with
// NextBeginOffset past everything examined, within the scan bound.
func TestGetFilteredNothingMatches(t *testing.T) {
	n := maxScanUnits(32) + 50
	s := filterStore(t, n)
	none := func([]byte) bool { return false }
	g := s.GetFiltered("T", 0, 0, 32, 1<<20, Filter{Properties: none})
	require.Equal(t, NoMatchedMessage, g.Status)
	require.Empty(t, g.Records)
	require.Equal(t, int64(maxScanUnits(32)), g.NextBeginOffset, "the scan stops at its bound")
	g = s.GetFiltered("T", 0, g.NextBeginOffset, 32, 1<<20, Filter{Properties: none})
	require.Equal(t, NoMatchedMessage, g.Status)
	require.Equal(t, int64(n), g.NextBeginOffset)
	// Only the last one matches: found at the far end of a scan.
	last := func(p []byte) bool { return propA(p) == n-1 }
	g = s.GetFiltered("T", 0, int64(maxScanUnits(32)), 32, 1<<20, Filter{Properties: last})
	require.Equal(t, Found, g.Status)
	require.Equal(t, []string{bodyN(n - 1)}, bodies(t, g.Records))
	require.Equal(t, int64(n), g.NextBeginOffset)
}

// TestGetFilteredTagsBeforeProperties: the properties filter sees only records whose tags
// code passed, and exactly their stored properties.
func TestGetFilteredTagsBeforeProperties(t *testing.T) {
	s := filterStore(t, 20)
	tagA := int64(JavaStringHash("TagA"))
	var seen []string
	f := Filter{
		Tags: func(c int64) bool { return c == tagA },
		Properties: func(p []byte) bool {
			seen = append(seen, string(p))
			return propA(p) >= 10
		},
	}
	g := s.GetFiltered("T", 0, 0, 32, 1<<20, f)
	require.Equal(t, []string{bodyN(10), bodyN(12), bodyN(14), bodyN(16), bodyN(18)}, bodies(t, g.Records))
	require.Equal(t, int64(20), g.NextBeginOffset)
	require.Len(t, seen, 10, "odd messages (TagB) are never read")
	require.Equal(t, "TAGS\x01TagA\x02a\x010\x02", seen[0])
	for i, r := range g.Records {
		d, _, err := DecodeRecord(r)
		require.NoError(t, err)
		require.Equal(t, int64(10+2*i), d.QueueOffset)
		require.Equal(t, fmt.Sprint(10+2*i), ParseProperties(d.Properties)["a"])
	}
}

// TestGetFilteredKeepsOnlyWhatItReturns: records returned from a read that also held rejected
// records are copies, so a pull that rejected much keeps only what it returns.
func TestGetFilteredKeepsOnlyWhatItReturns(t *testing.T) {
	s := filterStore(t, 64)
	g := s.GetFiltered("T", 0, 0, 32, 1<<20, Filter{Properties: func(p []byte) bool { return propA(p)%8 == 0 }})
	require.Len(t, g.Records, 8)
	for i, r := range g.Records {
		require.Equal(t, len(r), cap(r), "a returned record must not pin its whole read buffer")
		require.Equal(t, bodyN(8*i), bodyOf(t, r))
	}
	// All accepted: the records share their read buffer (no copy).
	g = s.GetFiltered("T", 0, 0, 4, 1<<20, Filter{Properties: func([]byte) bool { return true }})
	require.Len(t, g.Records, 4)
	require.Greater(t, cap(g.Records[0]), len(g.Records[0]))
}

// TestGetFilteredModel compares GetFiltered with a one-unit-at-a-time reference over random
// filters, offsets and limits: the same records, in order, and the same NextBeginOffset.
func TestGetFilteredModel(t *testing.T) {
	const n = 300
	s := filterStore(t, n)
	all := s.GetMessages("T", 0, 0, n, 0, nil)
	require.Len(t, all.Records, n)
	sizes := make([]int, n)
	for i, r := range all.Records {
		sizes[i] = len(r)
	}
	tagA := int64(JavaStringHash("TagA"))
	rnd := uint64(1)
	next := func(m int) int { rnd = rnd*6364136223846793005 + 1442695040888963407; return int(rnd>>33) % m }
	for round := 0; round < 400; round++ {
		offset, maxMsgs := next(n), 1+next(40)
		maxBytes := 0
		if next(2) == 0 {
			maxBytes = sizes[0] * (1 + next(10))
		}
		mod, rem, tagsOnly := 1+next(9), next(3), next(3) == 0
		accept := func(a int) bool { return a%mod == rem%mod }
		f := Filter{Properties: func(p []byte) bool { return accept(propA(p)) }}
		if tagsOnly {
			f.Tags = func(c int64) bool { return c == tagA }
		}
		// Reference: examine units in order; stop before the first unit that does not fit
		// what has been accepted so far.
		want := []string{}
		bytesIn, i := 0, offset
		for ; i < n && i < offset+maxScanUnits(maxMsgs); i++ {
			if len(want) > 0 && (len(want) >= maxMsgs || (maxBytes > 0 && bytesIn+sizes[i] > maxBytes)) {
				break
			}
			if tagsOnly && i%2 == 1 {
				continue
			}
			if !accept(i) {
				continue
			}
			want = append(want, bodyN(i))
			bytesIn += sizes[i]
		}
		g := s.GetFiltered("T", 0, int64(offset), maxMsgs, maxBytes, f)
		require.Equal(t, want, bodies(t, g.Records), "round %d: offset %d maxMsgs %d maxBytes %d mod %d rem %d tags %v", round, offset, maxMsgs, maxBytes, mod, rem, tagsOnly)
		require.Equal(t, int64(i), g.NextBeginOffset, "round %d", round)
		if len(want) == 0 {
			require.Equal(t, NoMatchedMessage, g.Status)
		} else {
			require.Equal(t, Found, g.Status)
		}
	}
}
