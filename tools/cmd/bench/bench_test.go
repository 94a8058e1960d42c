package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/tlsconf"
	"github.com/rmqha/rmqha/tools/e2e"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// TestBenchAgainstGroup runs the tool for a few seconds in each client kind and mode against a
// namesrv + SYNC_MASTER + slave group started as processes.
func TestBenchAgainstGroup(t *testing.T) {
	g := e2e.StartGroup(t, e2e.DefaultGroupConfig())
	base := DefaultConfig()
	base.Namesrv, base.RegistrationSecretFile = g.NamesrvAddr, g.RegistrationSecretFile
	base.Drain = 30 * time.Second

	run := func(t *testing.T, cfg Config) (*Result, string) {
		t.Helper()
		var progress bytes.Buffer
		res, err := Run(context.Background(), cfg, &progress)
		require.NoError(t, err)
		var sum bytes.Buffer
		res.Print(&sum)
		t.Logf("progress:\n%s\nsummary:\n%s", progress.String(), sum.String())
		return res, progress.String() + sum.String()
	}

	t.Run("GoClientSync", func(t *testing.T) {
		cfg := base
		cfg.Topic, cfg.Producers, cfg.Consumers, cfg.Duration = "BenchGoSync", 2, 1, 2*time.Second
		res, out := run(t, cfg)
		require.Positive(t, res.Sent)
		require.Zero(t, res.SendErrors, res.FirstError)
		require.Equal(t, res.Sent, res.Statuses[StatusOK])
		require.GreaterOrEqual(t, res.Consumed, res.Sent, "every stored message consumed")
		require.Len(t, res.SendLatency, int(res.Sent))
		require.Contains(t, out, "msg/s")
		require.Contains(t, out, "p99.9")
		require.Contains(t, out, "SEND_OK=")
		require.GreaterOrEqual(t, strings.Count(out, "consumed"), 1, "a progress line while running")
	})
	t.Run("GoClientAsync", func(t *testing.T) {
		cfg := base
		cfg.Topic, cfg.Mode, cfg.N, cfg.Duration, cfg.Consumers = "BenchGoAsync", ModeAsync, 500, 0, 0
		res, _ := run(t, cfg)
		require.Zero(t, res.SendErrors, res.FirstError)
		require.EqualValues(t, 500, res.Statuses[StatusOK])
	})
	t.Run("RawOnewayThenDrainSlave", func(t *testing.T) {
		cfg := base
		cfg.Topic, cfg.Client, cfg.Mode, cfg.N, cfg.Duration, cfg.Producers, cfg.Consumers = "BenchRaw", ClientRaw, ModeOneway, 400, 0, 2, 0
		res, _ := run(t, cfg)
		require.EqualValues(t, 400, res.Statuses[StatusOneway])
		g.WaitSlaveCaughtUp(t)

		cfg.Producers, cfg.Consumers, cfg.PullFrom = 0, 2, "slave"
		res, _ = run(t, cfg)
		require.GreaterOrEqual(t, res.Consumed, int64(400), res.FirstError)
	})
	t.Run("RawKeysIndexed", func(t *testing.T) {
		cfg := base
		cfg.Topic, cfg.Client, cfg.Mode, cfg.N, cfg.Duration, cfg.Consumers, cfg.Keys = "BenchKeys", ClientRaw, ModeAsync, 20, 0, 0, true
		res, _ := run(t, cfg)
		require.EqualValues(t, 20, res.Statuses[StatusOK], res.FirstError)
		require.NotEmpty(t, res.KeyPrefix)
		harness.Eventually(t, 30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ext := map[string]string{"topic": cfg.Topic, "key": res.KeyPrefix + "7", "maxNum": "32", "beginTimestamp": "0",
				"endTimestamp": strconv.FormatInt(math.MaxInt64, 10)}
			resp, err := g.Admin.Invoke(ctx, g.MasterAddr, remoting.NewRequest(remoting.QueryMessage, ext, nil))
			if err != nil {
				return err
			}
			if resp.Code != remoting.Success || len(resp.Body) == 0 {
				return fmt.Errorf("query by key: code %d %s", resp.Code, resp.Remark)
			}
			return nil
		})
	})
	t.Run("RawSyncWithRawConsumer", func(t *testing.T) {
		cfg := base
		cfg.Topic, cfg.Client, cfg.Producers, cfg.Consumers, cfg.Duration = "BenchRawSync", ClientRaw, 4, 1, time.Second
		res, _ := run(t, cfg)
		require.Positive(t, res.Sent)
		require.Zero(t, res.SendErrors, res.FirstError)
		require.GreaterOrEqual(t, res.Consumed, res.Sent)
	})
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	for _, mut := range []func(*Config){
		func(c *Config) { c.Mode = "fast" },
		func(c *Config) { c.Size = 8 },
		func(c *Config) { c.Producers, c.Consumers = 0, 0 },
		func(c *Config) { c.Duration, c.N = 0, 0 },
		func(c *Config) { c.Client = "java" },
		func(c *Config) { c.PullFrom = "slave" },
		func(c *Config) { c.Namesrv = " " },
	} {
		c := DefaultConfig()
		mut(&c)
		require.ErrorIs(t, c.Validate(), ErrInvalidConfig)
	}
}

func TestFlags(t *testing.T) {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	cfg.bindFlags(fs)
	require.NoError(t, fs.Parse([]string{"-namesrv", "a:1;b:2", "-topic", "T", "-n", "5", "-size", "2048",
		"-producers", "3", "-consumers", "2", "-mode", "oneway", "-duration", "3s", "-client", "raw", "-pull-from", "slave",
		"-tls.enable"}))
	require.NoError(t, cfg.Validate())
	require.Equal(t, []string{"a:1", "b:2"}, cfg.namesrvs())
	require.Equal(t, Config{Namesrv: "a:1;b:2", Topic: "T", Queues: 8, N: 5, Size: 2048, Producers: 3, Consumers: 2,
		Mode: ModeOneway, Inflight: 256, Duration: 3 * time.Second, Drain: 30 * time.Second, Client: ClientRaw,
		PullFrom: "slave", SendTimeout: 3 * time.Second, Progress: time.Second, TLS: tlsWith(true)}, cfg)
}

func tlsWith(enable bool) tlsconf.Config {
	c := tlsconf.DefaultConfig()
	c.TLSEnable = enable
	return c
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 1000; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 500*time.Millisecond, Percentile(d, 50))
	require.Equal(t, 990*time.Millisecond, Percentile(d, 99))
	require.Equal(t, 999*time.Millisecond, Percentile(d, 99.9))
	require.Equal(t, time.Second, Percentile(d, 100))
	require.Zero(t, Percentile(nil, 50))
}
