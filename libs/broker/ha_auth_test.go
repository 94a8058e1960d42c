package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

// TestHASecretIsMandatory: no role starts without an HA secret unless the operator opts out;
// the refusal names the keys to set.
func TestHASecretIsMandatory(t *testing.T) {
	for _, role := range []string{RoleSyncMaster, RoleAsyncMaster, RoleSlave} {
		cfg := testConfig(t)
		cfg.HASecret = ""
		cfg.BrokerRole = role
		if role == RoleSlave {
			cfg.BrokerID = 1
		}
		_, err := New(cfg, testLogger())
		require.ErrorIs(t, err, ErrInvalidConfig, role)
		for _, key := range []string{"haSecretFile", "haSecret", "haAllowUnauthenticated=true", role} {
			require.Contains(t, err.Error(), key, role)
		}
		cfg.HAAllowUnauthenticated = true
		_, err = New(cfg, testLogger())
		require.NoError(t, err, role)
	}
	cfg := testConfig(t)
	cfg.HASecret = "short"
	require.ErrorContains(t, cfg.Validate(), "haSecret: 5 bytes, at least 16")
	cfg = testConfig(t)
	cfg.HASecretFile = filepath.Join(t.TempDir(), "ha.secret")
	require.ErrorContains(t, cfg.Validate(), "haSecretFile: set together with haSecret")
}

// TestHASecretFile: the trimmed file content is the secret; a missing, unreadable or short
// file refuses start.
func TestHASecretFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ha.secret")
	cfg := testConfig(t)
	cfg.HASecret, cfg.HASecretFile = "", path
	_, err := New(cfg, testLogger())
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "haSecretFile")

	require.NoError(t, os.WriteFile(path, []byte("  tooshort \n"), 0o600))
	_, err = New(cfg, testLogger())
	require.ErrorContains(t, err, "holds 8 bytes, need at least 16")

	require.NoError(t, os.Chmod(path, 0o000))
	if os.Geteuid() != 0 { // root reads it anyway
		_, err = New(cfg, testLogger())
		require.ErrorContains(t, err, "permission denied")
	}
	require.NoError(t, os.Chmod(path, 0o600))

	require.NoError(t, os.WriteFile(path, []byte("\n"+testHASecret+"\r\n"), 0o600))
	got, err := cfg.HASecretValue()
	require.NoError(t, err)
	require.Equal(t, testHASecret, got)

	// A master reading the file and a slave with the same secret inline replicate.
	mcfg := syncMasterConfig(t)
	mcfg.HASecret, mcfg.HASecretFile = "", path
	m := startBroker(t, mcfg)
	startBroker(t, slaveConfig(t, m.HAAddr()))
	require.Eventually(t, func() bool { return m.view().master.InSyncCount() == 2 }, 10*time.Second, 5*time.Millisecond)
}

// TestHASecretsMustMatch: a slave with another secret never counts as a copy (the master
// answers SLAVE_NOT_AVAILABLE and counts the auth failures on /metrics); a slave pointed at a
// master with another secret refuses it and counts that too.
func TestHASecretsMustMatch(t *testing.T) {
	mcfg := syncMasterConfig(t)
	mcfg.HTTPPort = freePort(t)
	m := startBroker(t, mcfg)
	scfg := slaveConfig(t, m.HAAddr())
	scfg.HASecret = hawiretest.NewSecret()
	scfg.HTTPPort = freePort(t)
	s := startBroker(t, scfg)
	require.Eventually(t, func() bool {
		return metric(t, m, `rmqha_broker_ha_errors_total{kind="auth_failure"}`) >= 2
	}, 10*time.Second, 10*time.Millisecond)
	c := newTestClient(t)
	resp := send(t, c, m.Addr(), "S", 0, "", "not replicated")
	require.Equal(t, remoting.SlaveNotAvailable, resp.Code, resp.Remark)
	require.Equal(t, "1", resp.Ext("replicas"))
	require.Contains(t, s.Status().HASlave.LastError, "NOT_AUTHORISED")
	require.Zero(t, s.store.MaxOffset())

	// A fake master that does not know the secret: the slave refuses every verdict.
	f := hawiretest.NewFakeMaster(t, hawiretest.Refusal("", hawire.CodeDiverged, 0, 99, 0, 0))
	s2 := startBroker(t, func() Config { c := slaveConfig(t, f.Addr()); c.HTTPPort = freePort(t); return c }())
	require.Eventually(t, func() bool {
		return metric(t, s2, `rmqha_broker_ha_refused_masters_total{reason="unproven"}`) >= 2
	}, 10*time.Second, 10*time.Millisecond)
	require.Contains(t, s2.Status().HASlave.LastError, "did not prove")
}

// TestHAOptOutsWarnAtStart: haAllowUnauthenticated and haAllowWipe are logged as warnings at
// every start, and not without them.
func TestHAOptOutsWarnAtStart(t *testing.T) {
	logger, hook := test.NewNullLogger()
	cfg := testConfig(t)
	cfg.HASecret, cfg.HAAllowUnauthenticated = "", true
	cfg.BrokerRole, cfg.BrokerID, cfg.HAAllowWipe = RoleSlave, 1, true
	cfg.HAMasterAddress = "127.0.0.1:1"
	b, err := New(cfg, logger)
	require.NoError(t, err)
	require.NoError(t, b.Start())
	t.Cleanup(func() { _ = b.Shutdown(t.Context()) })
	require.Len(t, entries(hook, logrus.WarnLevel, "haAllowUnauthenticated=true"), 1)
	require.Len(t, entries(hook, logrus.WarnLevel, "haAllowWipe=true"), 1)

	logger, hook = test.NewNullLogger()
	m, err := New(testConfig(t), logger)
	require.NoError(t, err)
	require.NoError(t, m.Start())
	t.Cleanup(func() { _ = m.Shutdown(t.Context()) })
	for _, e := range hook.AllEntries() {
		require.False(t, e.Level <= logrus.WarnLevel && strings.Contains(e.Message, "haAllow"), "no opt-out warning: %s", e.Message)
	}
}
