package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
)

const (
	checkpointFile = "checkpoint"
	abortFile      = "abort"
	intentFile     = "intent"
	cpSlotSize     = 64
	cpMagic        = 0x524D4350 // "RMCP"
	cpVersion      = 1
	intentMagic    = 0x524D494E // "RMIN"
	intentTruncate = 1
	intentReset    = 2
)

// checkpoint is one slot of the checkpoint file.
type checkpoint struct {
	seq        uint64
	flushed    int64 // every CommitLog byte below is fsynced
	dispatched int64 // every record below has its consume-queue unit fsynced
	minOffset  int64
	timestamp  int64 // ms when written
	valid      bool
}

func encodeCheckpoint(c checkpoint) []byte {
	b := make([]byte, cpSlotSize)
	be := binary.BigEndian
	be.PutUint32(b[0:], cpMagic)
	be.PutUint32(b[4:], cpVersion)
	be.PutUint64(b[8:], c.seq)
	be.PutUint64(b[16:], uint64(c.flushed))
	be.PutUint64(b[24:], uint64(c.dispatched))
	be.PutUint64(b[32:], uint64(c.minOffset))
	be.PutUint64(b[40:], uint64(c.timestamp))
	be.PutUint32(b[48:], crc32.ChecksumIEEE(b[:48]))
	return b
}

func decodeCheckpoint(b []byte) checkpoint {
	be := binary.BigEndian
	if len(b) < cpSlotSize || be.Uint32(b) != cpMagic || be.Uint32(b[4:]) != cpVersion || be.Uint32(b[48:]) != crc32.ChecksumIEEE(b[:48]) {
		return checkpoint{}
	}
	c := checkpoint{
		seq:        be.Uint64(b[8:]),
		flushed:    int64(be.Uint64(b[16:])),
		dispatched: int64(be.Uint64(b[24:])),
		minOffset:  int64(be.Uint64(b[32:])),
		timestamp:  int64(be.Uint64(b[40:])),
		valid:      true,
	}
	if c.flushed < 0 || c.dispatched < 0 || c.dispatched > c.flushed {
		return checkpoint{}
	}
	return c
}

// readCheckpoint returns the newest valid slot of the two.
func (s *Store) readCheckpoint() checkpoint {
	f, err := s.fs.Open(filepath.Join(s.cfg.Dir, checkpointFile))
	if err != nil {
		return checkpoint{}
	}
	defer f.Close()
	b := make([]byte, 2*cpSlotSize)
	n, _ := f.ReadAt(b, 0)
	b = b[:n]
	var best checkpoint
	for i := 0; i+cpSlotSize <= len(b); i += cpSlotSize {
		c := decodeCheckpoint(b[i : i+cpSlotSize])
		if c.valid && (!best.valid || c.seq > best.seq) {
			best = c
		}
	}
	return best
}

// writeCheckpoint syncs the dirty consume-queue files, then records the
// flushed and dispatched offsets in the older of the two slots. With
// force, or once CQManifestInterval has passed since the last one, it
// first takes the queues' coverage and writes the coverage manifest after
// the sync (coverage.go).
func (s *Store) writeCheckpoint(force bool) error {
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	d := s.dispatched.Load()
	now := s.cfg.Now()
	var cov []queueCoverage
	withManifest := force || now.Sub(s.lastManifest) >= s.cfg.CQManifestInterval
	if withManifest {
		cov = s.snapshotCoverage()
	}
	// Every unit below d is in a file before the files are synced (Units written late).
	if err := s.flushPendingCQ(); err != nil {
		return err
	}
	if err := s.syncDirtyCQ(); err != nil {
		return err
	}
	if withManifest {
		if err := s.writeManifest(&manifest{dispatched: d, minOffset: min(s.minOffset.Load(), d), queues: cov}); err != nil {
			return err
		}
		s.lastManifest = now
	}
	fl := s.flushed.Load()
	if d > fl {
		d = fl
	}
	return s.putCheckpointLocked(fl, d)
}

func (s *Store) putCheckpoint(flushed, dispatched int64) error {
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	return s.putCheckpointLocked(flushed, dispatched)
}

func (s *Store) putCheckpointLocked(flushed, dispatched int64) error {
	if s.cpFile == nil {
		name := filepath.Join(s.cfg.Dir, checkpointFile)
		f, err := s.fs.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			f, err = s.fs.Create(name)
			if err == nil {
				err = s.fs.SyncDir(s.cfg.Dir)
			}
		}
		if err != nil {
			return fmt.Errorf("open checkpoint: %w", err)
		}
		s.cpFile = f
	}
	s.cpSeq++
	c := checkpoint{seq: s.cpSeq, flushed: flushed, dispatched: dispatched, minOffset: s.minOffset.Load(), timestamp: s.cfg.Now().UnixMilli()}
	if _, err := s.cpFile.WriteAt(encodeCheckpoint(c), int64(s.cpSeq%2)*cpSlotSize); err != nil {
		return fmt.Errorf("write checkpoint: %w", err)
	}
	if err := s.cpFile.Sync(); err != nil {
		return fmt.Errorf("sync checkpoint: %w", err)
	}
	s.lastCP = s.cfg.Now()
	return nil
}

// An intent file makes a multi-step change (truncate, reset) replayable: it
// is written and fsynced before the first step and removed after the last.
func (s *Store) writeIntent(kind byte, offset int64) error {
	b := make([]byte, 17)
	binary.BigEndian.PutUint32(b, intentMagic)
	b[4] = kind
	binary.BigEndian.PutUint64(b[5:], uint64(offset))
	binary.BigEndian.PutUint32(b[13:], crc32.ChecksumIEEE(b[:13]))
	name := filepath.Join(s.cfg.Dir, intentFile)
	tmp := name + ".tmp"
	f, err := s.fs.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	f.Close()
	if err := s.fs.Rename(tmp, name); err != nil {
		return err
	}
	return s.fs.SyncDir(s.cfg.Dir)
}

func (s *Store) readIntent() (kind byte, offset int64, ok bool) {
	f, err := s.fs.Open(filepath.Join(s.cfg.Dir, intentFile))
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	b := make([]byte, 17)
	if n, _ := f.ReadAt(b, 0); n != 17 {
		return 0, 0, false
	}
	if binary.BigEndian.Uint32(b) != intentMagic || binary.BigEndian.Uint32(b[13:]) != crc32.ChecksumIEEE(b[:13]) {
		return 0, 0, false
	}
	return b[4], int64(binary.BigEndian.Uint64(b[5:])), true
}

func (s *Store) clearIntent() error {
	if err := s.fs.Remove(filepath.Join(s.cfg.Dir, intentFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return s.fs.SyncDir(s.cfg.Dir)
}
