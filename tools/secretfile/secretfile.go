// Package secretfile makes the per-install secrets of a broker group: random values written
// once to files only their owner can read, reused on every later start. `make run`
// (tools/cmd/localgroup), the compose files' one-shot init service (tools/cmd/secretinit) and
// the test fixtures that start brokers use it, so no secret is ever a constant in the
// repository.
//
// File format: the secret (64 lowercase hex characters, 32 random bytes) followed by a
// newline. Readers trim surrounding white space (haSecretFile does), so a secret an operator
// writes by hand with a trailing newline works as well.
package secretfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// File names of the two per-install secrets, kept side by side in one folder.
const (
	// HAName holds the HA secret brokers read with haSecretFile.
	HAName = "ha.secret"
	// RegistrationName holds the secret for authenticated broker registration at the name
	// servers.
	RegistrationName = "registration.secret"
)

// MinLen is the shortest secret a reader should accept, in bytes (the brokers refuse shorter).
const MinLen = 16

// ErrWeak is returned by Ensure when an existing file holds a secret shorter than MinLen.
var ErrWeak = errors.New("secretfile: existing secret too short")

// New returns a fresh random secret: 32 bytes from crypto/rand, hex encoded.
func New() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("secretfile: no randomness: %v", err)) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b)
}

// Ensure makes sure path holds a secret: when the file is missing it writes a new one
// (mode 0600, created exclusively, so two starts racing keep one secret); when it exists it
// is kept as it is. It returns the secret and whether it was created now.
func Ensure(path string) (secret string, created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, err
	}
	s := New()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		_, werr := f.WriteString(s + "\n")
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			_ = os.Remove(path)
			return "", false, werr
		}
		return s, true, nil
	case errors.Is(err, fs.ErrExist):
		s, err := Read(path)
		return s, false, err
	default:
		return "", false, err
	}
}

// Read returns the trimmed secret in path; shorter than MinLen is ErrWeak.
func Read(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if len(s) < MinLen {
		return "", fmt.Errorf("%w: %s holds %d bytes, want at least %d", ErrWeak, path, len(s), MinLen)
	}
	return s, nil
}

// EnsureInstall makes both per-install secrets in dir (HAName and RegistrationName) and
// returns their paths.
func EnsureInstall(dir string) (haPath, registrationPath string, err error) {
	haPath, registrationPath = filepath.Join(dir, HAName), filepath.Join(dir, RegistrationName)
	if _, _, err := Ensure(haPath); err != nil {
		return "", "", err
	}
	if _, _, err := Ensure(registrationPath); err != nil {
		return "", "", err
	}
	return haPath, registrationPath, nil
}
