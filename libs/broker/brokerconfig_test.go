package broker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

func parseConfigBody(t *testing.T, body []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "line %q", line)
		out[k] = v
	}
	return out
}

func configVersion(t *testing.T, r *remoting.Command) route.DataVersion {
	t.Helper()
	var v route.DataVersion
	require.NoError(t, json.Unmarshal([]byte(r.Ext("version")), &v), "version %q", r.Ext("version"))
	return v
}

func TestBrokerConfigGetMasksSecretsAndUpdatePersists(t *testing.T) {
	cfg := testConfig(t)
	cfg.RegistrationSecret = testRegistrationSecret
	cfg.AccessKey, cfg.SecretKey = "rocketmq2", "12345678"
	cfg.TLSServerKeyPassword = "key-password"
	file := filepath.Join(t.TempDir(), "broker.conf")
	orig := "# broker-a, kept by hand\nbrokerName=broker-a\nslaveReadEnable=false\n\n# a key of RocketMQ with no meaning here\nclientWorkerThreads=4\n"
	require.NoError(t, os.WriteFile(file, []byte(orig), 0o644))
	cfg.ConfigFile = file
	b := startBroker(t, cfg)
	c := newTestClient(t)

	r := invoke(t, c, b.Addr(), remoting.GetBrokerConfig, nil, nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	got := parseConfigBody(t, r.Body)
	for _, k := range []string{"haSecret", "registrationSecret", "secretKey", "tls.server.keyPassword"} {
		require.Equal(t, "****", got[k], k)
	}
	require.NotContains(t, string(r.Body), testHASecret)
	require.NotContains(t, string(r.Body), testRegistrationSecret)
	require.NotContains(t, string(r.Body), "key-password")
	require.Equal(t, "rocketmq2", got["accessKey"])
	require.Equal(t, "false", got["slaveReadEnable"])
	require.Equal(t, "broker-a", got["brokerName"])
	v0 := configVersion(t, r)
	require.Positive(t, v0.Timestamp)

	r = invoke(t, c, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte("slaveReadEnable=true\nrejectTransactionMessage=true\n"))
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	require.True(t, b.live.slaveReadEnable.Load())
	require.True(t, b.Config().RejectTransactionMessage)

	// Applied live: a half send is refused at once.
	h := sendHalf(t, c, b.Addr(), "TxLive", "x")
	require.Equal(t, remoting.NoPermission, h.Code)

	r = invoke(t, c, b.Addr(), remoting.GetBrokerConfig, nil, nil)
	got = parseConfigBody(t, r.Body)
	require.Equal(t, "true", got["slaveReadEnable"])
	require.Equal(t, "true", got["rejectTransactionMessage"])
	require.Equal(t, v0.Counter+1, configVersion(t, r).Counter)

	// Persisted: comments and foreign keys kept, the key changed in place, the new one appended.
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "# broker-a, kept by hand\nbrokerName=broker-a\nslaveReadEnable=true\n\n# a key of RocketMQ with no meaning here\nclientWorkerThreads=4\nrejectTransactionMessage=true\n", string(data))
	_, err = os.Stat(file + ".tmp")
	require.True(t, os.IsNotExist(err))
}

func TestBrokerConfigUpdateRefusals(t *testing.T) {
	cfg := testConfig(t)
	file := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(file, []byte("brokerName=broker-a\n"), 0o644))
	cfg.ConfigFile = file
	b := startBroker(t, cfg)
	c := newTestClient(t)
	for _, tc := range []struct {
		body   string
		code   int32
		remark string
	}{
		{"brokerName=other\n", remoting.NoPermission, "Can not update config brokerName at runtime"},
		{"slaveReadEnable=true\nlistenPort=1\n", remoting.NoPermission, "listenPort"},
		{"brokerConfigPath=/tmp/x\n", remoting.NoPermission, "Can not update config in black list."},
		{"noSuchKey=1\n", remoting.NoPermission, "noSuchKey"},
		{"slaveReadEnable=maybe\n", remoting.SystemError, `"slaveReadEnable"`},
		{"=x\n", remoting.SystemError, "string2Properties error"},
	} {
		r := invoke(t, c, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte(tc.body))
		require.Equal(t, tc.code, r.Code, "%q: %s", tc.body, r.Remark)
		require.Contains(t, r.Remark, tc.remark, tc.body)
	}
	// Nothing changed, in memory or in the file.
	require.False(t, b.Config().SlaveReadEnable)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "brokerName=broker-a\n", string(data))
	r := invoke(t, c, b.Addr(), remoting.GetBrokerConfig, nil, nil)
	require.Zero(t, configVersion(t, r).Counter)
}

func TestBrokerConfigUpdateNotAppliedWhenFileCannotBeWritten(t *testing.T) {
	cfg := testConfig(t)
	mem := vfs.NewMem()
	require.NoError(t, mem.MkdirAll("/etc/rmqha"))
	f, err := mem.Create("/etc/rmqha/broker.conf")
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("storeReplyMessageEnable=true\n"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	var fail atomic.Bool
	cfg.ConfigFS = vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, path string) error {
		if fail.Load() && op == vfs.OpSync {
			return vfs.EIO
		}
		return nil
	}))
	cfg.ConfigFile = "/etc/rmqha/broker.conf"
	b := startBroker(t, cfg)
	c := newTestClient(t)
	fail.Store(true)
	r := invoke(t, c, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte("storeReplyMessageEnable=false"))
	require.Equal(t, remoting.SystemError, r.Code)
	require.Contains(t, r.Remark, "config not changed")
	require.True(t, b.Config().StoreReplyMessageEnable)
	got, err := mem.ReadFile("/etc/rmqha/broker.conf")
	require.NoError(t, err)
	require.Equal(t, "storeReplyMessageEnable=true\n", string(got))

	fail.Store(false)
	r = invoke(t, c, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte("storeReplyMessageEnable=false"))
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	require.False(t, b.Config().StoreReplyMessageEnable)
	got, err = mem.ReadFile("/etc/rmqha/broker.conf")
	require.NoError(t, err)
	require.Equal(t, "storeReplyMessageEnable=false\n", string(got))
}

func TestBrokerConfigWithoutFileAppliesAndSaysSo(t *testing.T) {
	b := startBroker(t, testConfig(t))
	c := newTestClient(t)
	r := invoke(t, c, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte("enablePropertyFilter=true\nfilterSupportRetry=true\n"))
	require.Equal(t, remoting.Success, r.Code)
	require.Contains(t, r.Remark, "not persisted")
	cfg := b.Config()
	require.True(t, cfg.EnablePropertyFilter)
	require.True(t, cfg.FilterSupportRetry)
}

// Both codes are admin codes: with aclEnable only an admin account reads or changes the
// configuration.
func TestBrokerConfigNeedsAdminAccount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(brokerACL), 0o600))
	cfg := testConfig(t)
	cfg.AclEnable, cfg.AclPlainFile = true, path
	b := startBroker(t, cfg)
	for _, c := range []*remoting.Client{newTestClient(t), signedClient(t, "consumer", "consumer-secret")} {
		r := invoke(t, c, b.Addr(), remoting.GetBrokerConfig, nil, nil)
		require.Equal(t, remoting.NoPermission, r.Code)
		require.Empty(t, r.Body)
		r = invoke(t, c, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte("slaveReadEnable=true"))
		require.Equal(t, remoting.NoPermission, r.Code)
	}
	require.False(t, b.Config().SlaveReadEnable)
	admin := signedClient(t, "brokeradmin", "admin-secret")
	r := invoke(t, admin, b.Addr(), remoting.UpdateBrokerConfig, nil, []byte("slaveReadEnable=true"))
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	r = invoke(t, admin, b.Addr(), remoting.GetBrokerConfig, nil, nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	require.Equal(t, "true", parseConfigBody(t, r.Body)["slaveReadEnable"])
}
