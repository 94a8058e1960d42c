package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEnsureCreatesOnceAndKeeps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registration.secret")
	created, err := ensure(path)
	require.NoError(t, err)
	require.True(t, created)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, strings.TrimSpace(string(b)), 64)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	created, err = ensure(path)
	require.NoError(t, err)
	require.False(t, created)
	again, _ := os.ReadFile(path)
	require.Equal(t, b, again, "an existing secret is kept")

	other := filepath.Join(t.TempDir(), "other")
	_, err = ensure(other)
	require.NoError(t, err)
	o, _ := os.ReadFile(other)
	require.NotEqual(t, b, o)
}
