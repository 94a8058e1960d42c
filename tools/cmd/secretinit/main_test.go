package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rmqha/rmqha/tools/secretfile"
	"github.com/stretchr/testify/require"
)

func TestSecretInitWritesOnceAndNeverPrints(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{dir}, &out, &errOut), errOut.String())
	ha, err := secretfile.Read(filepath.Join(dir, secretfile.HAName))
	require.NoError(t, err)
	reg, err := secretfile.Read(filepath.Join(dir, secretfile.RegistrationName))
	require.NoError(t, err)
	require.NotContains(t, out.String(), ha)
	require.NotContains(t, out.String(), reg)
	require.Contains(t, out.String(), "wrote a new random secret")

	out.Reset()
	require.Equal(t, 0, run([]string{dir}, &out, &errOut))
	require.Contains(t, out.String(), "kept the secret")
	again, _ := secretfile.Read(filepath.Join(dir, secretfile.HAName))
	require.Equal(t, ha, again)
	st, err := os.Stat(filepath.Join(dir, secretfile.HAName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	require.Equal(t, 2, run(nil, &out, &errOut))
}
