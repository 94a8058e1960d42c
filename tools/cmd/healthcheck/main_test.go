package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHTTP(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte("state"))
	}))
	defer srv.Close()
	var stderr bytes.Buffer
	require.Equal(t, 0, run([]string{srv.URL + "/health"}, &stderr), stderr.String())

	status = http.StatusServiceUnavailable
	stderr.Reset()
	require.Equal(t, 1, run([]string{srv.URL + "/health"}, &stderr))
	require.Contains(t, stderr.String(), "503")
}

func TestTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	var stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"tcp://" + addr}, &stderr), stderr.String())
	require.NoError(t, ln.Close())
	require.Equal(t, 1, run([]string{"-timeout", "1s", "tcp://" + addr}, &stderr))
}

func TestRefusedHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	var stderr bytes.Buffer
	require.Equal(t, 1, run([]string{"-timeout", "1s", "http://" + addr + "/health"}, &stderr))
	require.True(t, strings.HasPrefix(stderr.String(), "healthcheck: unhealthy:"), stderr.String())
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"a", "b"}, {"ftp://x:1"}, {"127.0.0.1:80"}, {"-timeout", "0s", "tcp://x:1"}, {"-nope"}} {
		var stderr bytes.Buffer
		require.Equal(t, 2, run(args, &stderr), "%v: %s", args, stderr.String())
	}
}
