// Command healthcheck probes one address and exits 0 only when it answers. It is copied into
// the project's container images, which are built FROM scratch and have no shell, curl or wget,
// so that Docker and Compose healthchecks can run it directly:
//
//	healthcheck http://127.0.0.1:18080/health   # exit 0 only on HTTP 200
//	healthcheck tcp://127.0.0.1:9876            # exit 0 when a TCP connection opens
//
// Any other outcome (refused, timeout, other status) exits 1 with one line on stderr saying why;
// a usage error exits 2. -timeout bounds the whole probe (default 3s).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run parses the arguments and probes; it returns the exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 3*time.Second, "how long the probe may take")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: healthcheck [-timeout 3s] http://HOST:PORT/PATH | tcp://HOST:PORT")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 || *timeout <= 0 {
		fs.Usage()
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := probe(ctx, fs.Arg(0)); err != nil {
		if errors.Is(err, errUsage) {
			fmt.Fprintln(stderr, "healthcheck:", err)
			return 2
		}
		fmt.Fprintln(stderr, "healthcheck: unhealthy:", err)
		return 1
	}
	return 0
}

// errUsage is returned by probe when the target is not a URL it understands.
var errUsage = errors.New("target must be http://, https:// or tcp://HOST:PORT")

// probe returns nil when target answers as healthy before ctx ends.
func probe(ctx context.Context, target string) error {
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: %q", errUsage, target)
	}
	switch u.Scheme {
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		// No proxy from the environment: the probe is about this container's own port.
		client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answered %s: %s", target, resp.Status, body)
		}
		return nil
	case "tcp":
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", u.Host)
		if err != nil {
			return err
		}
		return c.Close()
	default:
		return fmt.Errorf("%w: %q", errUsage, target)
	}
}
