// Command secretinit makes a broker group's per-install secrets once: in the folder it is
// given it writes ha.secret (read by the brokers with haSecretFile) and registration.secret
// (for authenticated registration at the name servers), each 32 random bytes in hex, mode
// 0600, and leaves files that already exist alone. It never prints a secret.
//
//	secretinit DIR
//
// The compose files run it as a one-shot service writing into a shared volume before any
// broker starts (the images are FROM scratch: no shell to do it with).
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/rmqha/rmqha/tools/secretfile"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "" || args[0][0] == '-' {
		fmt.Fprintln(stderr, "usage: secretinit DIR")
		return 2
	}
	dir := args[0]
	for _, name := range []string{secretfile.HAName, secretfile.RegistrationName} {
		path := dir + string(os.PathSeparator) + name
		_, created, err := secretfile.Ensure(path)
		if err != nil {
			fmt.Fprintf(stderr, "secretinit: %s: %v\n", path, err)
			return 1
		}
		if created {
			fmt.Fprintf(stdout, "secretinit: wrote a new random secret to %s\n", path)
		} else {
			fmt.Fprintf(stdout, "secretinit: kept the secret in %s\n", path)
		}
	}
	return 0
}
