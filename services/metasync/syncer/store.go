package syncer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/sirupsen/logrus"
)

// storeDirName is the folder of the snapshots under storePathRootDir:
// metasync/<cluster>/<brokerName>/<table>.json, names escaped with
// metasync.EscapeToken.
const storeDirName = "metasync"

// maxStoredSnapshot bounds what the store reads back at start.
const maxStoredSnapshot = 256 << 20

type snapKey struct {
	cluster, broker string
	table           metasync.Table
}

// Store keeps the latest snapshot per broker and table, in memory and on disk
// (atomic writes: temp file, fsync, rename, fsync of the folder).
type Store struct {
	fs  vfs.FS
	dir string
	log logrus.FieldLogger

	mu    sync.RWMutex
	snaps map[snapKey]metasync.Snapshot
}

// OpenStore loads every snapshot under <root>/metasync. Unreadable files are
// skipped with a warning (the next pull replaces them).
func OpenStore(fsys vfs.FS, root string, log logrus.FieldLogger) (*Store, error) {
	s := &Store{fs: fsys, dir: filepath.Join(root, storeDirName), log: log, snaps: map[snapKey]metasync.Snapshot{}}
	if err := fsys.MkdirAll(s.dir); err != nil {
		return nil, err
	}
	clusters, err := fsys.List(s.dir)
	if err != nil {
		return nil, err
	}
	for _, c := range clusters {
		brokers, err := fsys.List(filepath.Join(s.dir, c))
		if err != nil {
			continue // a file (the lock), not a folder
		}
		for _, b := range brokers {
			files, err := fsys.List(filepath.Join(s.dir, c, b))
			if err != nil {
				continue
			}
			for _, f := range files {
				if !strings.HasSuffix(f, ".json") {
					continue // .tmp left by a crash
				}
				path := filepath.Join(s.dir, c, b, f)
				snap, err := s.load(path)
				if err != nil {
					log.WithError(err).WithField("file", path).Warn("skipping stored snapshot")
					continue
				}
				s.snaps[snapKey{snap.Cluster, snap.BrokerName, snap.Table}] = snap
			}
		}
	}
	return s, nil
}

func (s *Store) load(path string) (metasync.Snapshot, error) {
	data, err := vfs.ReadFileLimit(s.fs, path, maxStoredSnapshot)
	if err != nil {
		return metasync.Snapshot{}, err
	}
	snap, err := metasync.DecodeSnapshot(data)
	if err != nil {
		return metasync.Snapshot{}, fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
	}
	if filepath.Base(path) != string(snap.Table)+".json" {
		return metasync.Snapshot{}, fmt.Errorf("%w: file holds table %s", ErrCorruptSnapshot, snap.Table)
	}
	return snap, nil
}

func (s *Store) path(cluster, broker string, t metasync.Table) string {
	return filepath.Join(s.dir, metasync.EscapeToken(cluster), metasync.EscapeToken(broker), string(t)+".json")
}

// Get returns the stored snapshot of a table.
func (s *Store) Get(cluster, broker string, t metasync.Table) (metasync.Snapshot, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	snap, ok := s.snaps[snapKey{cluster, broker, t}]
	return snap, ok
}

// Put stores snap unless the stored one holds the same content (and resets).
// A new content gets the next sequence number and is written to disk before
// it becomes visible; changed reports whether it was new.
func (s *Store) Put(snap metasync.Snapshot) (stored metasync.Snapshot, changed bool, err error) {
	k := snapKey{snap.Cluster, snap.BrokerName, snap.Table}
	s.mu.RLock()
	prev, ok := s.snaps[k]
	s.mu.RUnlock()
	if ok && prev.SameContent(snap) && sameResets(prev.Resets, snap.Resets) {
		return prev, false, nil
	}
	snap.Sequence = prev.Sequence + 1
	data, err := metasync.AppendSnapshot(nil, snap)
	if err != nil {
		return prev, false, err
	}
	if err := vfs.WriteFileAtomic(s.fs, s.path(snap.Cluster, snap.BrokerName, snap.Table), data); err != nil {
		return prev, false, err
	}
	s.mu.Lock()
	s.snaps[k] = snap
	s.mu.Unlock()
	return snap, true, nil
}

func sameResets(a, b []metasync.OffsetReset) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Topic != b[i].Topic || a[i].Group != b[i].Group || !a[i].Version.Equal(b[i].Version) {
			return false
		}
	}
	return true
}

// lockStoreDir takes an exclusive flock on <root>/metasync/LOCK so that two
// processes never write one store. The returned function releases it.
func lockStoreDir(root string) (func(), error) {
	dir := filepath.Join(root, storeDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrStoreLocked, dir)
		}
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
