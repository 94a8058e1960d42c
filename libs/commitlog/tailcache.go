package commitlog

import (
	"sync"
	"sync/atomic"
)

// tailChunk is the size of one chunk of the tail cache.
const tailChunk = 1 << 20

// tailCache keeps a copy of the newest CommitLog bytes the store wrote. The readers that
// follow the end of the log — the dispatcher, HA sends to slaves that keep up, consumers of
// fresh messages — copy them from memory instead of reading the file back, which saves a
// pread per pass, as RocketMQ's mapped files serve fresh reads from memory. The file stays
// the record: a read the cache cannot serve whole goes to the file, and a write reaches the
// cache only after it reached the file.
//
// Layout: len(chunks) chunks of tailChunk bytes. The chunk for CommitLog offset o is
// chunks[(o/tailChunk) % len(chunks)]; it holds the offsets [base, base+tailChunk) with base =
// o - o%tailChunk, of which [lo, the store's max offset) are valid.
//
// Concurrency: one writer at a time (under appendMu, or the group's single leader) writes
// bytes at or above the store's max offset, and publishes them by raising it afterwards.
// What a chunk holds (base, lo) changes under the chunk's lock. A reader holds that lock
// across its copy and, holding it, checks that the bytes lie below the max offset, so it
// copies only published bytes, which no writer touches: it sees the offsets it asked for, or
// a miss. A cut of the log (Truncate, Reset) first invalidates every chunk, so bytes written
// again below an old max offset are never read from a chunk that held the old ones.
type tailCache struct {
	chunks []tailSlot
}

type tailSlot struct {
	mu   sync.RWMutex
	base int64 // first offset of the chunk; -1 when it holds nothing
	lo   int64 // first valid offset
	buf  []byte
}

// newTailCache returns a cache of about size bytes, nil (no cache) for size 0. The chunks
// are allocated when first written, so a small store holds only what it wrote.
func newTailCache(size int) *tailCache {
	n := (size + tailChunk - 1) / tailChunk
	if n <= 0 {
		return nil
	}
	t := &tailCache{chunks: make([]tailSlot, n)}
	for i := range t.chunks {
		t.chunks[i].base = -1
	}
	return t
}

// EnableTailCache turns on a cache that Config.TailCacheDeferred left off (a replica being
// promoted); with the cache already on, or TailCacheBytes 0, it does nothing. The cache starts
// empty: a chunk is taken over by the first write into it after this call and serves only from
// that offset on (its lo), so bytes written before are read from the file, even where they
// share a chunk with bytes written after.
func (s *Store) EnableTailCache() {
	if s.tail.Load() == nil && s.cfg.TailCacheBytes > 0 {
		s.tail.CompareAndSwap(nil, newTailCache(s.cfg.TailCacheBytes))
	}
}

func (t *tailCache) slot(off int64) (*tailSlot, int64) {
	base := off - off%tailChunk
	return &t.chunks[(off/tailChunk)%int64(len(t.chunks))], base
}

// write copies b, just written to the file at off, into the cache.
func (t *tailCache) write(off int64, b []byte) {
	if t == nil {
		return
	}
	for len(b) > 0 {
		c, base := t.slot(off)
		if c.base != base || off < c.lo {
			// The chunk held older offsets (or none): take it over from off on.
			c.mu.Lock()
			if c.buf == nil {
				c.buf = make([]byte, tailChunk)
			}
			c.base, c.lo = base, off
			c.mu.Unlock()
		}
		k := copy(c.buf[off-base:], b)
		b = b[k:]
		off += int64(k)
	}
}

// read fills p with the bytes at off when the cache holds all of them, all below the store's
// max offset; false sends the caller to the file (p may then hold part of them).
func (t *tailCache) read(p []byte, off int64, max *atomic.Int64) bool {
	if t == nil {
		return false
	}
	end := off + int64(len(p))
	for len(p) > 0 {
		c, base := t.slot(off)
		c.mu.RLock()
		if c.base != base || off < c.lo || end > max.Load() {
			c.mu.RUnlock()
			return false
		}
		k := copy(p, c.buf[off-base:])
		c.mu.RUnlock()
		p = p[k:]
		off += int64(k)
	}
	return true
}

// invalidate forgets everything: the log is about to be cut or reset, so bytes below a max
// offset a reader loaded before may be written again.
func (t *tailCache) invalidate() {
	if t == nil {
		return
	}
	for i := range t.chunks {
		c := &t.chunks[i]
		c.mu.Lock()
		c.base, c.lo = -1, 0
		c.mu.Unlock()
	}
}
