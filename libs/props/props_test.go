package props

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type testConfig struct {
	BrokerName      string        `prop:"brokerName"`
	ListenPort      int           `prop:"listenPort"`
	SlaveReadEnable bool          `prop:"slaveReadEnable"`
	FlushInterval   time.Duration `prop:"flushIntervalCommitLog,ms"`
	NamesrvAddr     []string      `prop:"namesrvAddr"`
	HASecret        string        `prop:"haSecret"`
	HASecretFile    string        `prop:"haSecretFile"`
	Ratio           float64       `prop:"ratio"`
	BrokerID        int64         `prop:"brokerId"`
	unexported      int
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func TestParseSyntax(t *testing.T) {
	in := "# comment\n! other\n\nbrokerName = broker-a\nlistenPort:10911\nnamesrvAddr 127.0.0.1:9876;\\\n  127.0.0.1:9877\nempty=\n"
	es, err := Parse(strings.NewReader(in), "x")
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range es {
		got[e.Key] = e.Value
	}
	require.Equal(t, map[string]string{
		"brokerName":  "broker-a",
		"listenPort":  "10911",
		"namesrvAddr": "127.0.0.1:9876;127.0.0.1:9877",
		"empty":       "",
	}, got)
	require.Equal(t, "x:6", es[2].Source)
}

func TestPrecedence(t *testing.T) {
	cfg := testConfig{BrokerName: "def", ListenPort: 1, FlushInterval: time.Second}
	file := writeFile(t, "brokerName=fromfile\nlistenPort=10911\nflushIntervalCommitLog=500\nnamesrvAddr=a:1;b:2\n")
	env := []string{"RMQ_LISTEN_PORT=20911", "RMQ_SLAVE_READ_ENABLE=true", "OTHER=1"}
	_, err := Load(&cfg, "broker", []string{"-c", file, "-brokerId", "2", "-listenPort=30911"}, env, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "fromfile", cfg.BrokerName)
	require.Equal(t, 30911, cfg.ListenPort) // flag beats env beats file
	require.True(t, cfg.SlaveReadEnable)
	require.Equal(t, 500*time.Millisecond, cfg.FlushInterval)
	require.Equal(t, []string{"a:1", "b:2"}, cfg.NamesrvAddr)
	require.Equal(t, int64(2), cfg.BrokerID)
}

func TestUnknownKeyNamesKeyAndLine(t *testing.T) {
	var cfg testConfig
	file := writeFile(t, "brokerName=a\nlistenPrt=1\n")
	_, err := Load(&cfg, "broker", []string{"-c", file}, nil, &bytes.Buffer{})
	require.ErrorContains(t, err, `unknown key "listenPrt"`)
	require.ErrorContains(t, err, "broker.conf:2")
}

func TestBadValueNamesKeyAndSource(t *testing.T) {
	var cfg testConfig
	_, err := Load(&cfg, "broker", nil, []string{"RMQ_LISTEN_PORT=abc"}, &bytes.Buffer{})
	require.ErrorContains(t, err, `bad value "abc" for key "listenPort" (env RMQ_LISTEN_PORT)`)
	_, err = Load(&cfg, "broker", []string{"-slaveReadEnable=maybe"}, nil, &bytes.Buffer{})
	require.ErrorContains(t, err, `key "slaveReadEnable" (flag -slaveReadEnable)`)
	_, err = Load(&cfg, "broker", []string{"-nosuchflag=1"}, nil, &bytes.Buffer{})
	require.Error(t, err)
}

func TestMissingFile(t *testing.T) {
	var cfg testConfig
	_, err := Load(&cfg, "broker", []string{"-c", "/nonexistent/broker.conf"}, nil, &bytes.Buffer{})
	require.ErrorContains(t, err, "/nonexistent/broker.conf")
}

func TestEnvName(t *testing.T) {
	for in, want := range map[string]string{
		"listenPort":            "RMQ_LISTEN_PORT",
		"haMasterAddress":       "RMQ_HA_MASTER_ADDRESS",
		"brokerIP1":             "RMQ_BROKER_IP_1",
		"diskMaxUsedSpaceRatio": "RMQ_DISK_MAX_USED_SPACE_RATIO",
		"brokerId":              "RMQ_BROKER_ID",
		// RocketMQ's dotted TLS keys.
		"tls.server.mode":             "RMQ_TLS_SERVER_MODE",
		"tls.server.need.client.auth": "RMQ_TLS_SERVER_NEED_CLIENT_AUTH",
		"tls.server.certPath":         "RMQ_TLS_SERVER_CERT_PATH",
		"tls.client.trustCertPath":    "RMQ_TLS_CLIENT_TRUST_CERT_PATH",
		"tls.test.mode.enable":        "RMQ_TLS_TEST_MODE_ENABLE",
	} {
		require.Equal(t, want, EnvName(in), in)
	}
}

func TestDumpMasksSecrets(t *testing.T) {
	cfg := testConfig{HASecret: "s3cr3t", HASecretFile: "/etc/rmqha/ha.secret", BrokerName: "b", NamesrvAddr: []string{"x", "y"}}
	d := Dump(&cfg)
	require.Equal(t, "****", d["haSecret"])
	require.Equal(t, "/etc/rmqha/ha.secret", d["haSecretFile"], "a secret's location is not the secret")
	require.Equal(t, "b", d["brokerName"])
	require.Equal(t, "x,y", d["namesrvAddr"])
	require.Contains(t, Keys(&cfg), "listenPort")
}

// Dotted keys load from a file, the environment and flags like any other key.
func TestDottedKeys(t *testing.T) {
	var cfg struct {
		Mode     string `prop:"tls.server.mode"`
		CertPath string `prop:"tls.server.certPath"`
		Enable   bool   `prop:"tls.enable"`
		Password string `prop:"tls.server.keyPassword"`
	}
	file := writeFile(t, "tls.server.mode=enforcing\ntls.server.certPath=/from/file\ntls.server.keyPassword=pw\n")
	_, err := Load(&cfg, "broker", []string{"-c", file, "-tls.enable=true"},
		[]string{"RMQ_TLS_SERVER_CERT_PATH=/from/env"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "enforcing", cfg.Mode)
	require.Equal(t, "/from/env", cfg.CertPath)
	require.True(t, cfg.Enable)
	require.Equal(t, "****", Dump(&cfg)["tls.server.keyPassword"])
	_, err = Load(&cfg, "broker", nil, []string{"RMQ_TLS_ENABLE=maybe"}, &bytes.Buffer{})
	require.ErrorContains(t, err, `key "tls.enable" (env RMQ_TLS_ENABLE)`)
}

func FuzzParse(f *testing.F) {
	f.Add("a=b\nc:d\\\ne\n#x\n")
	f.Add("\\\\\\\n=")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = Parse(strings.NewReader(s), "fuzz")
	})
}

func TestForeignKeysAreReportedNotRefused(t *testing.T) {
	path := writeFile(t, "brokerName=b\nsendMessageThreadPoolNums=16\nlistenPort=10911\ntypoKey=1\n")
	var cfg testConfig
	type ignored struct{ key, value, source string }
	var got []ignored
	o := Options{
		Foreign: map[string]bool{"sendMessageThreadPoolNums": true, "brokerName": true},
		Ignored: func(k, v, src string) { got = append(got, ignored{k, v, src}) },
	}
	_, err := LoadOptions(&cfg, "broker", []string{"-c", path}, nil, &bytes.Buffer{}, o)
	require.Error(t, err, "a key neither bound nor foreign is still refused")
	require.Contains(t, err.Error(), `unknown key "typoKey"`)

	path = writeFile(t, "brokerName=b\nsendMessageThreadPoolNums=16\nlistenPort=10911\n")
	got = nil
	_, err = LoadOptions(&cfg, "broker", []string{"-c", path}, nil, &bytes.Buffer{}, o)
	require.NoError(t, err)
	require.Equal(t, "b", cfg.BrokerName, "a bound key is set even when also listed as foreign")
	require.Equal(t, 10911, cfg.ListenPort)
	require.Equal(t, []ignored{{"sendMessageThreadPoolNums", "16", path + ":2"}}, got)
	// As a flag a foreign key is still unknown (flags name this program's keys only).
	_, err = LoadOptions(&cfg, "broker", []string{"-sendMessageThreadPoolNums=4"}, nil, &bytes.Buffer{}, o)
	require.Error(t, err)
}

func TestJavaKeysCheckAsRocketMQParses(t *testing.T) {
	k := JavaKeys{"n": JavaInt, "l": JavaLong, "d": JavaDouble, "b": JavaBool, "s": JavaString}
	require.Equal(t, map[string]bool{"n": true, "l": true, "d": true, "b": true, "s": true}, k.Foreign())
	for key, v := range map[string]string{"n": " 8 ", "l": "9999999999", "d": "0.5", "b": "maybe", "s": "", "other": "x"} {
		require.NoError(t, k.Check(key, v), key)
	}
	for key, v := range map[string]string{"n": "9999999999", "l": "ten", "d": "half"} {
		require.ErrorIs(t, k.Check(key, v), ErrJavaValue, key)
	}
}

func TestRewriteReplacesInPlaceAndAppends(t *testing.T) {
	src := "# comment\nlistenPort = 9876\nlogLevel=info\nmulti=a,\\\n  b\nlistenPort=9877\nkeep=x\\\n  y\n! other\nlast=1"
	got := string(Rewrite([]byte(src), map[string]string{"listenPort": "9999", "multi": "c", "newKey": "v", "another": "w"}))
	require.Equal(t, "# comment\nlistenPort=9999\nlogLevel=info\nmulti=c\nlistenPort=9999\nkeep=x\\\n  y\n! other\nlast=1\nanother=w\nnewKey=v\n", got)
	entries, err := Parse(strings.NewReader(got), "f")
	require.NoError(t, err)
	vals := map[string]string{}
	for _, e := range entries {
		vals[e.Key] = e.Value
	}
	require.Equal(t, map[string]string{"listenPort": "9999", "logLevel": "info", "multi": "c", "keep": "xy", "last": "1", "another": "w", "newKey": "v"}, vals)
	require.Equal(t, "a=1\n", string(Rewrite(nil, map[string]string{"a": "1"})))
}

// Durations dump in their key's unit, so a dump loads back into the same values.
func TestDumpDurationsReadBack(t *testing.T) {
	type durations struct {
		Flush time.Duration `prop:"flushIntervalCommitLog,ms"`
		Idle  time.Duration `prop:"serverChannelMaxIdleTimeSeconds"`
		Odd   time.Duration `prop:"oddMillis,ms"`
	}
	cfg := durations{Flush: 500 * time.Millisecond, Idle: 2 * time.Minute, Odd: 1500 * time.Microsecond}
	d := Dump(&cfg)
	require.Equal(t, map[string]string{"flushIntervalCommitLog": "500", "serverChannelMaxIdleTimeSeconds": "120", "oddMillis": "1.5ms"}, d)
	var back durations
	for k, v := range d {
		require.NoError(t, Set(&back, k, v, "dump"))
	}
	require.Equal(t, cfg, back)
}
