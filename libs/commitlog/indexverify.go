package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/sirupsen/logrus"
)

// Verifying finished index files in the background
//
// An open checks only the header and the trailer of each finished index file
// (checkIndexFileShape). Reading every file whole, as verifyIndexFile does, made each open
// read the whole index: about 60 bytes per keyed message, a tenth of a large store's log,
// before the store could serve. Once the store is open, indexVerifyLoop verifies, oldest
// first, every file the open did not write itself, with the whole of verifyIndexFile:
//
//	file fails -> a replacement is built from the CommitLog records the file covers,
//	              [start, indexedTo), into name+rebuildSuffix (same slot and entry counts),
//	              finished and fsynced like any file, renamed over the damaged one, and put in
//	              its place for queries; an open removes a replacement left unfinished
//
// Until a file is replaced, queries read it as it is, which is safe: a lookup's walk goes
// only to older entry numbers, and QueryIndex keeps only records whose topic and key match.
// A damaged file can hide a message from a query until it is replaced, never answer with
// another one. A file that a cut, a reset or retention removes meanwhile is left to them.

// rebuildSuffix names the replacement of a damaged index file while it is built.
const rebuildSuffix = ".rebuild"

// indexVerifyPause is the pause between two files: the verifier reads the whole index once
// per open, and it should not hold the disk for the consumers and the dispatcher that long.
const indexVerifyPause = 5 * time.Millisecond

// errVerifyStopped ends a rebuild when the store closes.
var errVerifyStopped = errors.New("commitlog: index verification stopped")

// IndexCheck is what the background verification of the index files has done since Open.
type IndexCheck struct {
	Pending  int    `json:"pending"`        // finished files not verified yet
	Verified int    `json:"verified"`       // files verified whole, the replaced ones included
	Rebuilt  int    `json:"rebuilt"`        // files that failed verification and were replaced
	Failed   int    `json:"failed"`         // files that failed and could not be replaced (see Last)
	Last     string `json:"last,omitempty"` // the latest failure: the file, the exact reason and what was done
}

// IndexCheck reports the background verification of the index files (zero with
// MessageIndexEnable off).
func (s *Store) IndexCheck() IndexCheck {
	ix := s.idx
	if ix == nil {
		return IndexCheck{}
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	c := ix.check
	for _, f := range ix.files {
		if f.sealed && !f.verified {
			c.Pending++
		}
	}
	return c
}

// indexVerifyLoop verifies the finished files the open did not verify, then returns.
func (s *Store) indexVerifyLoop() {
	defer s.wg.Done()
	ix := s.idx
	ix.mu.RLock()
	var todo []*indexFile
	for _, f := range ix.files {
		if f.sealed && !f.verified {
			todo = append(todo, f)
		}
	}
	ix.mu.RUnlock()
	if len(todo) == 0 {
		return
	}
	start := time.Now()
	for i, f := range todo {
		if i > 0 {
			select {
			case <-s.stopCh:
				return
			case <-time.After(indexVerifyPause):
			}
		}
		select {
		case <-s.stopCh:
			return
		default:
		}
		s.verifyIndexFileInBackground(f)
	}
	c := s.IndexCheck()
	s.log.WithFields(logrus.Fields{"files": len(todo), "rebuilt": c.Rebuilt, "failed": c.Failed, "took_ms": time.Since(start).Milliseconds()}).
		Info("index files verified")
}

// verifyIndexFileInBackground verifies f whole and replaces it when it fails.
func (s *Store) verifyIndexFileInBackground(f *indexFile) {
	ix := s.idx
	size, err := f.f.Size()
	if err == nil {
		_, err = verifyIndexFile(f.f, size, f.start)
	}
	if !ix.present(f) {
		return // cut, reset or dropped meanwhile (its reads may have failed for that)
	}
	if err == nil {
		ix.mu.Lock()
		f.verified = true
		ix.check.Verified++
		ix.mu.Unlock()
		return
	}
	log := s.log.WithError(err).WithFields(logrus.Fields{"file": f.name, "offset": f.start, "indexed_to": f.indexedTo})
	log.Warn("index file failed verification; rebuilding it from the CommitLog")
	replaced, rerr := s.rebuildIndexFile(f)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	switch {
	case errors.Is(rerr, errVerifyStopped):
		return // the next open verifies it again
	case rerr == nil && !replaced:
		return // cut, reset or dropped while its replacement was built
	case rerr != nil:
		ix.check.Failed++
		ix.check.Last = fmt.Sprintf("%s: %v; not rebuilt: %v", f.name, err, rerr)
		log.WithField("rebuild_error", rerr.Error()).Error("index file not rebuilt; queries may miss the messages it indexes")
	default:
		ix.check.Verified++
		ix.check.Rebuilt++
		ix.check.Last = fmt.Sprintf("%s: %v; rebuilt from CommitLog offsets [%d, %d)", f.name, err, f.start, f.indexedTo)
		log.Warn("index file rebuilt from the CommitLog")
	}
}

// present reports whether f is still one of the index's files.
func (ix *indexService) present(f *indexFile) bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.indexLocked(f) >= 0
}

// indexLocked is f's position in ix.files, -1 when it is not there (ix.mu held).
func (ix *indexService) indexLocked(f *indexFile) int {
	for i, g := range ix.files {
		if g == f {
			return i
		}
	}
	return -1
}

// rebuildIndexFile builds a replacement of the finished file old from the CommitLog records
// in [old.start, old.indexedTo) and puts it in old's place (see the top of this file). It
// reports replaced false, and no error, when old is gone by then.
func (s *Store) rebuildIndexFile(old *indexFile) (replaced bool, err error) {
	ix := s.idx
	tmp := old.name + rebuildSuffix
	f, err := s.fs.Create(tmp)
	if err != nil {
		return false, err
	}
	nf := &indexFile{start: old.start, name: tmp, f: f, hdr: indexHeader{indexCount: 1},
		slotNum: old.slotNum, maxNum: old.maxNum, slots: make([]int32, old.slotNum)}
	defer func() {
		if !replaced {
			nf.f.Close()
			if rerr := s.fs.Remove(tmp); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
				err = rerr
			}
		}
	}()
	from := max(old.start, s.minOffset.Load())
	if from < old.indexedTo {
		put := func(m *recordMeta, phy int64) error {
			select {
			case <-s.stopCh:
				return errVerifyStopped
			default:
			}
			uniq, keys := recordKeys(m)
			nf.putRecord(m, uniq, keys, phy)
			if len(nf.pending) >= indexPendingFlush {
				return ix.flushPending(nf)
			}
			return nil
		}
		if err := s.walkRecords(from, old.indexedTo, put, nil); err != nil {
			return false, err
		}
	}
	if err := ix.finish(nf, old.indexedTo); err != nil {
		return false, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	i := ix.indexLocked(old)
	if i < 0 {
		return false, nil
	}
	if err := s.fs.Rename(tmp, old.name); err != nil {
		return false, err
	}
	if err := s.fs.SyncDir(ix.dir); err != nil {
		return false, err
	}
	nf.name = old.name
	ix.files[i] = nf
	old.f.Close()
	return true, nil
}
