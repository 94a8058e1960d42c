package acl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

const (
	ymlV1 = "accounts:\n  - accessKey: producer1\n    secretKey: secret-v1\n    defaultTopicPerm: PUB\n"
	ymlV2 = "accounts:\n  - accessKey: producer1\n    secretKey: secret-v2\n    defaultTopicPerm: PUB\n  - accessKey: producer2\n    secretKey: secret-p2\n    defaultTopicPerm: DENY\n"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(data), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func sendReq(ak, sk, topic string) *remoting.Command {
	req := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": topic}, []byte("b"))
	SignCommand(req, ak, sk)
	return req
}

// good → bad → good: a version that does not parse is counted and logged, the last good table
// keeps serving, and the next good version applies.
func TestGuardReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeFile(t, path, ymlV1)
	g, err := NewGuard(Config{Path: path})
	require.NoError(t, err)
	allowed := func(ak, sk string) bool { return g.Decide("127.0.0.1:5000", sendReq(ak, sk, "T")).Allowed() }
	require.True(t, allowed("producer1", "secret-v1"))
	require.False(t, allowed("producer2", "secret-p2"))

	writeFile(t, path, ymlV2)
	require.NoError(t, g.Reload())
	require.False(t, allowed("producer1", "secret-v1"), "the old secret is gone")
	require.True(t, allowed("producer1", "secret-v2"))
	require.Equal(t, uint64(1), g.Stats().Reloads)

	writeFile(t, path, ymlV2+"    topicPerms: [t=WRONG]\n")
	err = g.Reload()
	require.ErrorIs(t, err, ErrInvalidAccount)
	require.True(t, allowed("producer1", "secret-v2"), "the last good table keeps serving")
	st := g.Stats()
	require.False(t, st.LastReloadOK)
	require.Equal(t, uint64(1), st.ReloadFailures)

	writeFile(t, path, "")
	require.ErrorIs(t, g.Reload(), ErrEmptyFile)
	require.True(t, allowed("producer1", "secret-v2"), "an empty file never replaces the table")

	require.NoError(t, os.Remove(path))
	require.ErrorIs(t, g.Reload(), os.ErrNotExist)
	require.True(t, allowed("producer1", "secret-v2"), "a deleted file does not drop the table")

	writeFile(t, path, ymlV1)
	require.NoError(t, g.Reload())
	require.True(t, allowed("producer1", "secret-v1"))
	st = g.Stats()
	require.True(t, st.LastReloadOK)
	require.Equal(t, uint64(2), st.Reloads)
	require.Equal(t, uint64(3), st.ReloadFailures)
	require.Equal(t, 1, st.Accounts)
}

// The watch applies a change by itself, once two reads in a row agree.
func TestGuardWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeFile(t, path, ymlV1)
	g, err := NewGuard(Config{Path: path, ReloadInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	g.Start()
	defer g.Close()
	writeFile(t, path, ymlV2)
	require.Eventually(t, func() bool {
		return g.Decide("127.0.0.1:1", sendReq("producer1", "secret-v2", "T")).Allowed()
	}, 10*time.Second, 10*time.Millisecond)
	g.Close()
	g.Close() // idempotent
}

func TestReloadState(t *testing.T) {
	a, b, c := [32]byte{1}, [32]byte{2}, [32]byte{3}
	s := reloadState{current: a}
	require.Equal(t, actNone, s.observe(a, nil, false))
	require.Equal(t, actWait, s.observe(b, nil, false), "new bytes wait for a second read")
	require.Equal(t, actWait, s.observe(c, nil, false), "still changing")
	require.Equal(t, actParse, s.observe(c, nil, false), "settled")
	s.failed, s.bad = c, true // it did not parse (as poll records it)
	require.Equal(t, actNone, s.observe(c, nil, false), "a refused version is reported once")
	require.Equal(t, actParse, s.observe(c, nil, true), "unless forced")
	require.Equal(t, actRestored, s.observe(a, nil, false), "back to the version in use after a refused one")
	require.Equal(t, actNone, s.observe(a, nil, false), "reported once")
	require.Equal(t, actWait, s.observe(c, nil, false), "the refused version again is new once more")
	readErr := errors.New("gone")
	require.Equal(t, actUnreadable, s.observe([32]byte{}, readErr, false))
	require.Equal(t, actNone, s.observe([32]byte{}, readErr, false), "an unreadable file is reported once")
	require.Equal(t, actRestored, s.observe(a, nil, false), "back to the version in use after an unreadable file")
	require.Equal(t, actNone, s.observe(a, nil, false))
	require.Equal(t, actParse, s.observe(b, nil, true))
}

// A refused version, then the file written back to the version in use: the guard reports the
// newest version in use again (acl_last_reload_ok 1) without counting a reload.
func TestGuardRestoredAfterRefusedVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeFile(t, path, ymlV2)
	g, err := NewGuard(Config{Path: path, ReloadInterval: time.Hour, Logger: DefaultConfig().Logger})
	require.NoError(t, err)
	require.True(t, g.Stats().LastReloadOK)
	writeFile(t, path, "accounts: [")
	require.Error(t, g.Reload())
	require.False(t, g.Stats().LastReloadOK)
	writeFile(t, path, ymlV2)
	require.NoError(t, g.Reload())
	require.True(t, g.Stats().LastReloadOK, "the file holds the table in use again")
	require.EqualValues(t, 0, g.Stats().Reloads, "nothing was reloaded")
	require.True(t, g.Decide("127.0.0.1:1", sendReq("producer1", "secret-v2", "T")).Allowed())
}

func TestGuardConfig(t *testing.T) {
	_, err := NewGuard(Config{})
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = NewGuard(Config{Path: filepath.Join(t.TempDir(), "none.yml")})
	require.ErrorIs(t, err, os.ErrNotExist, "ACL on without its file refuses to start")
	require.Error(t, Config{Path: "x", ReloadInterval: time.Millisecond, Logger: DefaultConfig().Logger}.Validate())
	require.Equal(t, "conf/plain_acl.yml", ResolvePath("", ""))
	require.Equal(t, "/opt/rocketmq/conf/plain_acl.yml", ResolvePath("", "/opt/rocketmq"))
	require.Equal(t, "/etc/acl.yml", ResolvePath("/etc/acl.yml", "/opt/rocketmq"))
	require.Equal(t, "/opt/rocketmq/acl/x.yml", ResolvePath("acl/x.yml", "/opt/rocketmq"))
}

// Installed on a remoting server: refusals are NO_PERMISSION with the remark, before the
// handler; admitted requests reach it; metrics count both.
func TestGuardOnServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	writeFile(t, path, ymlV2)
	g, err := NewGuard(Config{Path: path})
	require.NoError(t, err)
	cfg := remoting.DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Guard = g
	srv, err := remoting.NewServer(cfg)
	require.NoError(t, err)
	var served atomic.Int32
	srv.HandleFunc(remoting.SendMessage, func(w remoting.ResponseWriter, r *remoting.Command) {
		served.Add(1)
		_ = w.Write(remoting.NewResponse(r, remoting.Success, ""))
	})
	require.NoError(t, srv.Start())
	defer srv.Close()

	call := func(signer func(*remoting.Command)) *remoting.Command {
		cc := remoting.DefaultClientConfig()
		cc.Signer = signer
		cli := remoting.NewClient(cc)
		defer cli.Close()
		resp, err := cli.Invoke(context.Background(), srv.Addr().String(), remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "T"}, []byte("x")))
		require.NoError(t, err)
		return resp
	}
	resp := call(nil)
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Equal(t, "No accessKey is configured", resp.Remark)
	resp = call(Signer("producer1", "wrong-secret"))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Equal(t, "Check signature failed for accessKey=producer1", resp.Remark)
	resp = call(Signer("producer2", "secret-p2"))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.True(t, strings.HasPrefix(resp.Remark, "No default permission for topic:T"), resp.Remark)
	require.Zero(t, served.Load(), "a refused request never reaches its handler")
	resp = call(CredentialsSigner(Credentials{AccessKey: "producer1", SecretKey: "secret-v2"}))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, int32(1), served.Load())
	require.Nil(t, CredentialsSigner(Credentials{}))

	reg := prometheus.NewRegistry()
	reg.MustRegister(g.Collector("test_"))
	require.Equal(t, 1.0, testutil.ToFloat64(metricVec(t, reg, "test_acl_requests_total", "no_access_key")))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP test_acl_accounts Accounts in the ACL table in use.
# TYPE test_acl_accounts gauge
test_acl_accounts 2
# HELP test_acl_last_reload_ok 1 when the newest version of plain_acl.yml is the one in use, 0 while it does not load.
# TYPE test_acl_last_reload_ok gauge
test_acl_last_reload_ok 1
`), "test_acl_accounts", "test_acl_last_reload_ok"))
	st := g.Stats()
	require.Equal(t, uint64(1), st.Decisions["signed"])
	require.Equal(t, uint64(1), st.Decisions["bad_signature"])
	require.Equal(t, uint64(1), st.Decisions["no_permission"])
}

// metricVec picks one reason's sample of the requests counter.
func metricVec(t *testing.T, reg *prometheus.Registry, name, reason string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return m.GetCounter().GetValue() })
				}
			}
		}
	}
	t.Fatalf("no %s{reason=%q}", name, reason)
	return nil
}
