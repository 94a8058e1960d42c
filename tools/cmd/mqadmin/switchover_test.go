package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSwitchoverUsage(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, ExitUsage, run([]string{"switchover", "-consul", "127.0.0.1:1"}, &out, &errb))
	require.Contains(t, errb.String(), "-b is required")

	errb.Reset()
	t.Setenv("CONSUL_HTTP_ADDR", "")
	require.Equal(t, ExitUsage, run([]string{"switchover", "-b", "broker-a"}, &out, &errb))
	require.Contains(t, errb.String(), "-consul is required")

	errb.Reset()
	require.Equal(t, ExitUnreachable, run([]string{"switchover", "-b", "broker-a", "-consul", "127.0.0.1:1", "-wait", "1s"}, &out, &errb))

	out.Reset()
	require.Equal(t, ExitOK, run([]string{"help"}, &out, &errb))
	require.Contains(t, out.String(), "switchover")
}
