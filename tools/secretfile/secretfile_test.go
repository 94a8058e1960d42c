package secretfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEnsureCreatesOnceAndReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	ha, reg, err := EnsureInstall(dir)
	require.NoError(t, err)
	a, err := Read(ha)
	require.NoError(t, err)
	b, err := Read(reg)
	require.NoError(t, err)
	require.Len(t, a, 64)
	require.NotEqual(t, a, b, "two secrets, not one")
	for _, p := range []string{ha, reg} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), p)
	}
	// The next run reuses them.
	again, created, err := Ensure(ha)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, a, again)
	_, _, err = EnsureInstall(dir)
	require.NoError(t, err)
	b2, _ := Read(reg)
	require.Equal(t, b, b2)
	// Fresh per install.
	other, _, err := Ensure(filepath.Join(t.TempDir(), HAName))
	require.NoError(t, err)
	require.NotEqual(t, a, other)
}

func TestReadRefusesWeakSecrets(t *testing.T) {
	p := filepath.Join(t.TempDir(), HAName)
	require.NoError(t, os.WriteFile(p, []byte("  short\n"), 0o600))
	_, _, err := Ensure(p)
	require.ErrorIs(t, err, ErrWeak)
	require.NoError(t, os.WriteFile(p, []byte("  0123456789abcdef0123\n"), 0o600))
	s, err := Read(p)
	require.NoError(t, err)
	require.Equal(t, "0123456789abcdef0123", s)
}
