package vfs

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteFileAtomicAndReadFileLimit(t *testing.T) {
	m := NewMem()
	p := "/d/sub/f.json"
	require.NoError(t, WriteFileAtomic(m, p, []byte("one")))
	require.NoError(t, WriteFileAtomic(m, p, []byte("two")))
	got, err := ReadFileLimit(m, p, 10)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
	_, err = ReadFileLimit(m, p, 1)
	require.EqualError(t, err, "/d/sub/f.json is 3 bytes, more than 1")
	_, err = ReadFileLimit(m, "/nope", 1)
	require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	_, err = m.Open(p + ".tmp")
	require.True(t, errors.Is(err, fs.ErrNotExist), "no temporary file left: %v", err)
}
