package harness

import (
	"crypto/rand"
	"encoding/hex"
)

// NewSecret returns a random secret for one test run (32 random bytes, hex): process
// fixtures give the same one to the name servers and brokers they start
// (registrationSecret), so no test depends on a constant in the repository.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (it panics if the system source does)
	return hex.EncodeToString(b[:])
}
