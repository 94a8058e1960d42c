// Command gensecret creates the per-install secret files of a broker group: for each path it
// is given that does not exist yet (or is empty), it writes 32 random bytes as hex and a
// newline, mode 0600; an existing secret is kept, so running it again changes nothing. The
// compose files run it once, before the name servers and brokers start, and those read the
// file through registrationSecretFile.
//
//	gensecret /secrets/registration.secret
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gensecret FILE...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		created, err := ensure(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gensecret:", err)
			os.Exit(1)
		}
		if created {
			fmt.Println("gensecret: created", path)
		} else {
			fmt.Println("gensecret: kept", path)
		}
	}
}

// ensure writes a new secret to path unless it already holds one.
func ensure(path string) (bool, error) {
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return false, nil
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return false, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(hex.EncodeToString(b[:])+"\n"), 0o600); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}
