package service

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/broker"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/stretchr/testify/require"
)

func TestMainRefusesBadConfig(t *testing.T) {
	var out bytes.Buffer
	master := Options{Program: "master", CheckRole: MasterRoles}
	require.Equal(t, 2, Main(master, []string{"-brokerRole=SLAVE", "-brokerId=1"}, nil, &out))
	require.Contains(t, out.String(), "use the slave binary")

	out.Reset()
	require.Equal(t, 2, Main(master, []string{"-noSuchKey=1"}, nil, &out))
	require.Contains(t, out.String(), "noSuchKey")

	out.Reset()
	require.Equal(t, 2, Main(master, nil, []string{"RMQ_BROKER_ID=3"}, &out))
	require.Contains(t, out.String(), "brokerId")

	slave := Options{Program: "slave", CheckRole: SlaveRoles, Defaults: func(c *broker.Config) {
		c.BrokerRole = broker.RoleSlave
		c.BrokerID = 1
	}}
	out.Reset()
	require.Equal(t, 2, Main(slave, []string{"-brokerRole=ASYNC_MASTER"}, nil, &out))
	require.Contains(t, out.String(), "use the master binary")

	out.Reset()
	require.Equal(t, 2, Main(slave, []string{"-logFormat=xml"}, nil, &out))

	out.Reset()
	require.Equal(t, 0, Main(slave, []string{"-h"}, nil, &out))
	require.Contains(t, out.String(), "haMasterAddress")
	require.Contains(t, out.String(), "haSecretFile")
}

// TestMainRefusesToStartWithoutHASecret: master and slave binaries refuse to start without
// an HA secret, naming the keys; a secret file that cannot be read refuses too.
func TestMainRefusesToStartWithoutHASecret(t *testing.T) {
	master := Options{Program: "master", CheckRole: MasterRoles}
	slave := Options{Program: "slave", CheckRole: SlaveRoles, Defaults: func(c *broker.Config) {
		c.BrokerRole = broker.RoleSlave
		c.BrokerID = 1
	}}
	store := "-storePathRootDir=" + t.TempDir()
	for _, run := range []struct {
		o    Options
		args []string
	}{
		{master, []string{store}},
		{master, []string{store, "-brokerRole=SYNC_MASTER"}},
		{slave, []string{store}},
		{slave, []string{store, "-enableFailover=true"}},
	} {
		var out bytes.Buffer
		require.Equal(t, 2, Main(run.o, run.args, nil, &out), "%s %v", run.o.Program, run.args)
		for _, key := range []string{"haSecretFile", "haSecret", "haAllowUnauthenticated=true", "refusing to start"} {
			require.Contains(t, out.String(), key, "%s %v", run.o.Program, run.args)
		}
	}
	var out bytes.Buffer
	missing := filepath.Join(t.TempDir(), "no-such-file")
	require.Equal(t, 2, Main(master, []string{store, "-haSecretFile=" + missing}, nil, &out))
	require.Contains(t, out.String(), "haSecretFile")
	require.Contains(t, out.String(), "no such file")
}

func TestMainStopsCleanlyOnSIGTERM(t *testing.T) {
	secret := hawiretest.NewSecret()
	secretFile := filepath.Join(t.TempDir(), "ha.secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	var out syncBuffer
	done := make(chan int, 1)
	// The port is picked by opening and closing a listener, so another process
	// may take it first: start again on a new port when that happens.
	for attempt := 0; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		out = syncBuffer{}
		args := []string{"-listenPort=" + strconv.Itoa(port), "-haListenPort=0", "-bindAddress=127.0.0.1",
			"-brokerIP1=127.0.0.1", "-storePathRootDir=" + t.TempDir(), "-mappedFileSizeCommitLog=1048576",
			"-maxMessageSize=65536", "-haSecretFile=" + secretFile, "-logFormat=json"}
		go func() { done <- Main(Options{Program: "master", CheckRole: MasterRoles}, args, nil, &out) }()
		var exited bool
		require.Eventually(t, func() bool {
			select {
			case code := <-done:
				exited = true
				require.True(t, attempt < 3 && strings.Contains(out.String(), "address already in use"), "exit %d before running:\n%s", code, out.String())
				return true
			default:
			}
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err != nil {
				return false
			}
			c.Close()
			return strings.Contains(out.String(), "broker running")
		}, 20*time.Second, 10*time.Millisecond)
		if !exited {
			break
		}
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case code := <-done:
		require.Equal(t, 0, code, out.String())
	case <-time.After(20 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	require.Contains(t, out.String(), "clean shutdown")
	// The start-up line names the secret file, never its content.
	require.Contains(t, out.String(), "haSecretFile="+secretFile)
	require.NotContains(t, out.String(), secret)
	// Structured fields on every broker line.
	require.Contains(t, out.String(), `"service":"master"`)
	require.Contains(t, out.String(), `"cluster":"DefaultCluster"`)
	require.Contains(t, out.String(), `"role":"ASYNC_MASTER"`)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
