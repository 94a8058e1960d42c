package meta

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"path/filepath"

	"github.com/sirupsen/logrus"
)

// LoadSource says where a table's content came from at start.
type LoadSource int

const (
	// LoadedNothing: no file (fresh table, or in-memory mode).
	LoadedNothing LoadSource = iota
	// LoadedFile: the table file itself.
	LoadedFile
	// LoadedBackup: the table file was missing or unusable; <file>.bak was used.
	LoadedBackup
)

func (s LoadSource) String() string {
	switch s {
	case LoadedFile:
		return "file"
	case LoadedBackup:
		return "backup"
	default:
		return "none"
	}
}

// LoadInfo reports how a table was loaded.
type LoadInfo struct {
	// Path is the table file ("" in in-memory mode).
	Path string
	// Source is where the content came from.
	Source LoadSource
	// Cause is why the main file was not used when Source is LoadedBackup.
	Cause error
}

// fileStore reads and atomically writes one table file.
type fileStore struct {
	fs   FS
	dir  string
	path string
	log  logrus.FieldLogger
}

// newFileStore returns nil in in-memory mode.
func newFileStore(cfg Config, name string) *fileStore {
	if cfg.StorePathRootDir == "" {
		return nil
	}
	dir := filepath.Join(cfg.StorePathRootDir, configDirName)
	return &fileStore{
		fs:   cfg.FS,
		dir:  dir,
		path: filepath.Join(dir, name),
		log:  cfg.Logger.WithField("file", filepath.Join(dir, name)),
	}
}

// load returns the content of the file, or of its backup when the file is
// missing or fails validate. It returns nil data when neither exists.
func (s *fileStore) load(validate func([]byte) error) ([]byte, LoadInfo, error) {
	if s == nil {
		return nil, LoadInfo{}, nil
	}
	info := LoadInfo{Path: s.path}
	bak := s.path + ".bak"
	data, err := readFile(s.fs, s.path)
	if err == nil {
		if err = validate(data); err == nil {
			info.Source = LoadedFile
			return data, info, nil
		}
	}
	mainMissing := errors.Is(err, iofs.ErrNotExist)
	bdata, berr := readFile(s.fs, bak)
	if errors.Is(berr, iofs.ErrNotExist) {
		if mainMissing {
			return nil, info, nil
		}
		return nil, info, fmt.Errorf("%w: %s: %w; no backup %s", ErrCorrupt, s.path, err, bak)
	}
	if berr == nil {
		berr = validate(bdata)
	}
	if berr != nil {
		return nil, info, fmt.Errorf("%w: %s: %w; backup %s: %w", ErrCorrupt, s.path, err, bak, berr)
	}
	info.Source, info.Cause = LoadedBackup, err
	s.log.WithError(err).WithField("backup", bak).Warn("metadata file unusable, loaded its backup")
	return bdata, info, nil
}

// save replaces the file with data atomically, keeping the previous valid
// content as <file>.bak. On error the file is unchanged.
func (s *fileStore) save(data []byte, validate func([]byte) error) error {
	if s == nil {
		return nil
	}
	if err := s.fs.MkdirAll(s.dir); err != nil {
		return fmt.Errorf("meta: create %s: %w", s.dir, err)
	}
	tmp := s.path + ".tmp"
	if err := s.writeSynced(tmp, data); err != nil {
		return err
	}
	old, err := readFile(s.fs, s.path)
	switch {
	case err == nil && validate(old) == nil:
		bakTmp := s.path + ".bak.tmp"
		if err := s.writeSynced(bakTmp, old); err != nil {
			_ = s.fs.Remove(tmp)
			return err
		}
		if err := s.fs.Rename(bakTmp, s.path+".bak"); err != nil {
			_ = s.fs.Remove(tmp)
			_ = s.fs.Remove(bakTmp)
			return fmt.Errorf("meta: rename %s: %w", bakTmp, err)
		}
	case err == nil, errors.Is(err, iofs.ErrNotExist):
		// Nothing worth keeping: leave any existing backup alone.
	default:
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("meta: read %s: %w", s.path, err)
	}
	if err := s.fs.Rename(tmp, s.path); err != nil {
		_ = s.fs.Remove(tmp)
		return fmt.Errorf("meta: rename %s: %w", tmp, err)
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return fmt.Errorf("meta: sync %s: %w", s.dir, err)
	}
	return nil
}

func (s *fileStore) writeSynced(name string, data []byte) (err error) {
	f, err := s.fs.Create(name)
	if err != nil {
		return fmt.Errorf("meta: create %s: %w", name, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("meta: close %s: %w", name, cerr)
		}
		if err != nil {
			_ = s.fs.Remove(name)
		}
	}()
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("meta: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("meta: sync %s: %w", name, err)
	}
	return nil
}
