package meta

import (
	"fmt"
	"io"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// FS is the file-system seam of the table files: the repository's
// commitlog/vfs interface (vfs.Default in production; vfs.NewMem,
// vfs.NewErrorFS in tests).
type FS = vfs.FS

// readFile returns a whole file; a missing file returns an error satisfying
// errors.Is(err, fs.ErrNotExist).
func readFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	if size > maxTableFileSize {
		return nil, fmt.Errorf("%w: %s is %d bytes, limit %d", ErrInvalidSnapshot, name, size, maxTableFileSize)
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(err == io.EOF && int64(n) == size) {
		return nil, err
	}
	return buf[:n], nil
}

// maxTableFileSize bounds what load reads into memory (a topics.json with a
// hundred thousand topics is ~25 MiB).
const maxTableFileSize = 256 << 20
