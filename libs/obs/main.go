package obs

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sirupsen/logrus"
)

// Exit ends a service's main with the exit code its run error means: 0 for
// nil or a help request, 2 (after printing "<program>: <err>" to stderr) for
// any other error, which a service's run returns for configuration and
// start-up failures.
func Exit(program string, err error) {
	os.Exit(ExitCode(program, err, os.Stderr))
}

// ExitCode is Exit's decision without exiting.
func ExitCode(program string, err error, stderr io.Writer) int {
	// flag.ErrHelp (props.ErrHelp): -h printed the usage.
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", program, err)
	return 2
}

// WaitForStop blocks until SIGINT or SIGTERM and logs which one arrived.
func WaitForStop(log logrus.FieldLogger) os.Signal {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	s := <-sig
	log.WithField("signal", s.String()).Info("stopping")
	return s
}
