package harness

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	consulapi "github.com/hashicorp/consul/api"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// TestConsulAndNATSRoundTrip proves the test environment has the real parts:
// a Consul agent that stores and returns a key, and a NATS server that
// delivers a message.
func TestConsulAndNATSRoundTrip(t *testing.T) {
	c := StartConsulT(t)
	cfg := consulapi.DefaultConfig()
	cfg.Address = c.HTTPAddr()
	cl, err := consulapi.NewClient(cfg)
	require.NoError(t, err)
	_, err = cl.KV().Put(&consulapi.KVPair{Key: "rmqha/test/key", Value: []byte("value-1")}, nil)
	require.NoError(t, err)
	kv, _, err := cl.KV().Get("rmqha/test/key", nil)
	require.NoError(t, err)
	require.NotNil(t, kv)
	require.Equal(t, "value-1", string(kv.Value))

	// The agent keeps its state across a restart (it runs with a data dir).
	require.NoError(t, c.Stop(10*time.Second))
	require.NoError(t, c.RestartAndWait())
	Eventually(t, 20*time.Second, func() error {
		kv, _, err = cl.KV().Get("rmqha/test/key", nil)
		if err != nil {
			return err
		}
		if kv == nil || string(kv.Value) != "value-1" {
			return fmt.Errorf("key after restart: %+v", kv)
		}
		return nil
	})

	n := StartNATST(t)
	nc, err := nats.Connect(n.URL())
	require.NoError(t, err)
	defer nc.Close()
	sub, err := nc.SubscribeSync("rmqha.test")
	require.NoError(t, err)
	require.NoError(t, nc.Publish("rmqha.test", []byte("hello")))
	msg, err := sub.NextMsg(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, "hello", string(msg.Data))
}

func TestNATSRestartSamePort(t *testing.T) {
	n := StartNATST(t)
	n2, err := n.Restart()
	require.NoError(t, err)
	defer n2.Shutdown()
	require.Equal(t, n.Port, n2.Port)
	nc, err := nats.Connect(n2.URL())
	require.NoError(t, err)
	nc.Close()
}

func TestProcessFaults(t *testing.T) {
	sh, err := exec.LookPath("sh")
	require.NoError(t, err)
	p := StartProcessT(t, ProcessConfig{Name: "ticker", Bin: sh, Args: []string{"-c", "echo started; exec sleep 60"}})
	Eventually(t, 5*time.Second, func() error {
		if !p.LogContains("started") {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	require.NoError(t, p.Pause())
	require.NoError(t, p.Resume())
	require.True(t, p.Running())
	p.Kill()
	require.False(t, p.Running())
	require.Error(t, p.ExitErr()) // killed by a signal
	require.NoError(t, p.Restart())
	require.True(t, p.Running())
	require.Error(t, p.Stop(5*time.Second)) // sleep dies of SIGTERM: not a clean exit
}

func TestProxyCutDelayHeal(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	p := NewProxyT(t, ln.Addr().String())
	echo := func() (time.Duration, error) {
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		start := time.Now()
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return 0, err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return 0, err
		}
		require.Equal(t, "ping\n", line)
		return time.Since(start), nil
	}
	_, err = echo()
	require.NoError(t, err)
	p.SetDelay(50 * time.Millisecond)
	d, err := echo()
	require.NoError(t, err)
	require.GreaterOrEqual(t, d, 100*time.Millisecond) // both directions delayed
	p.SetDelay(0)
	p.Cut()
	_, err = echo()
	require.Error(t, err)
	p.Heal()
	_, err = echo()
	require.NoError(t, err)
}

// TestFreePortsNeverTwice: a port is handed out once per process, outside the kernel's
// ephemeral range (where outgoing connections take their local ports), and was free when
// handed out.
func TestFreePortsNeverTwice(t *testing.T) {
	seen := map[int]bool{}
	eph := ephemeralLow()
	for i := 0; i < 50; i++ {
		ps, err := FreePorts(4)
		require.NoError(t, err)
		for _, p := range ps {
			require.False(t, seen[p], "port %d handed out twice", p)
			seen[p] = true
			if eph-portPoolLow >= minPoolSize {
				require.GreaterOrEqual(t, p, portPoolLow)
				require.Less(t, p, eph, "port %d is in the ephemeral range", p)
			}
		}
	}
	// A port someone holds is skipped.
	next := func() int { ports.mu.Lock(); defer ports.mu.Unlock(); return ports.next }
	held := next()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(held)))
	if err != nil {
		t.Skipf("port %d is held by another process already: %v", held, err)
	}
	defer ln.Close()
	p, err := FreePort()
	require.NoError(t, err)
	require.NotEqual(t, held, p)
}
