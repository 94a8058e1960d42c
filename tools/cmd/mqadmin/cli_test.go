package main

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runOut runs a command line and returns its exit code, stdout and stderr.
func runOut(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// deadAddr returns a loopback address nobody listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestUsageErrors(t *testing.T) {
	t.Setenv("NAMESRV_ADDR", "")
	cases := [][]string{
		{},
		{"noSuchCommand"},
		{"topicRoute", "-n", "127.0.0.1:9876"}, // -t missing
		{"topicRoute", "-n", "127.0.0.1:9876", "-t", "T", "extra"}, // stray argument
		{"topicRoute", "-t", "T"},                                  // no name server anywhere
		{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T"},         // neither -b nor -c
		{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-b", "127.0.0.1:1", "-c", "C"},
		{"updateTopic", "-n", "127.0.0.1:9876", "-t", "bad topic!", "-b", "127.0.0.1:1"},
		{"updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-b", "127.0.0.1:1", "-r", "0"},
		{"deleteTopic", "-n", "127.0.0.1:9876", "-t", "T"}, // -c missing
		{"consumerProgress", "-n", "127.0.0.1:9876"},       // -g missing
		{"brokerStatus"},                                         // -b missing
		{"clusterList", "-n", "nocolon"},                         // bad address
		{"haStatus", "-n", "127.0.0.1:9876", "--interval", "0s"}, // bad interval
		{"clusterList", "--no-such-flag"},
	}
	for _, args := range cases {
		code, _, stderr := runOut(args...)
		assert.Equal(t, ExitUsage, code, "args %q; stderr %s", args, stderr)
		assert.NotEmpty(t, stderr, "args %q", args)
	}
	code, out, _ := runOut("help")
	assert.Equal(t, ExitOK, code)
	for _, c := range commands {
		assert.Contains(t, out, c.name)
	}
	code, _, _ = runOut("haStatus", "-h")
	assert.Equal(t, ExitOK, code)
}

func TestUnreachable(t *testing.T) {
	dead := deadAddr(t)
	for _, args := range [][]string{
		{"clusterList", "-n", dead},
		{"topicList", "-n", dead + ";" + dead},
		{"topicRoute", "-n", dead, "-t", "T"},
		{"haStatus", "-n", dead},
		{"brokerStatus", "-b", dead},
		{"updateTopic", "-t", "T", "-b", dead},
		{"consumerProgress", "-n", dead, "-g", "G"},
	} {
		code, _, stderr := runOut(args...)
		assert.Equal(t, ExitUnreachable, code, "args %q; stderr %s", args, stderr)
		assert.Contains(t, stderr, "unreachable", "args %q", args)
	}
	t.Setenv("NAMESRV_ADDR", dead)
	code, _, _ := runOut("topicList")
	assert.Equal(t, ExitUnreachable, code, "NAMESRV_ADDR is the default of -n")
}

func TestFormatting(t *testing.T) {
	assert.Equal(t, "512 B", bytesString(512))
	assert.Equal(t, "1.5 KiB", bytesString(1536))
	assert.Equal(t, "3.0 MiB", bytesString(3<<20))
	assert.Equal(t, "2.0 GiB", bytesString(2<<30))
	assert.Equal(t, "45s", durationString(44.2))
	assert.Equal(t, "3m20s", durationString(200))
	assert.Equal(t, "2h05m", durationString(7500))
	assert.Equal(t, "∞", durationString(1e12))

	n := HANode{LagBytes: 6 << 20, Progress: floatp(0.5), RateBytesPerSec: floatp(2 << 20), ETASeconds: floatp(3)}
	line := progressLine(n)
	assert.Equal(t, "["+strings.Repeat("#", 15)+strings.Repeat(".", 15)+"]  50.0%  6.0 MiB behind  2.0 MiB/s  3s left", line)
	n = HANode{LagBytes: 100, Progress: floatp(1), RateBytesPerSec: floatp(0)}
	assert.Contains(t, progressLine(n), "stalled")
	assert.Contains(t, progressLine(HANode{LagBytes: 100}), "rate unknown")

	assert.Equal(t, []string{"a:1", "b:2", "c:3"}, splitAddrs(" a:1;b:2,c:3 "))
	assert.Equal(t, "RW(6)", permString(6))
	assert.Equal(t, "-W(2)", permString(2))
	assert.Equal(t, "RWX(7)", permString(7))
}
