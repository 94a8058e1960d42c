package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// mqadmin signs with -ak/-sk, or with ROCKETMQ_HOME/conf/tools.yml as RocketMQ's tools do; an
// ACL-enabled server refuses it otherwise.
func TestACLCredentials(t *testing.T) {
	tbl, err := acl.Parse([]byte("accounts:\n  - accessKey: opsadmin\n    secretKey: ops-secret\n    admin: true\n"))
	require.NoError(t, err)
	cfg := remoting.DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Guard = acl.NewStaticGuard(tbl, nil)
	srv, err := remoting.NewServer(cfg)
	require.NoError(t, err)
	srv.HandleFunc(remoting.GetBrokerClusterInfo, func(w remoting.ResponseWriter, r *remoting.Command) {
		resp := remoting.NewResponse(r, remoting.Success, "")
		resp.Body = []byte(`{"brokerAddrTable":{},"clusterAddrTable":{}}`)
		_ = w.Write(resp)
	})
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	ns := srv.Addr().String()

	home := t.TempDir()
	t.Setenv("ROCKETMQ_HOME", home)
	code, _, stderr := runOut("clusterList", "-n", ns)
	require.Equal(t, ExitServer, code, stderr)
	require.Contains(t, stderr, "No accessKey is configured")

	code, _, stderr = runOut("clusterList", "-n", ns, "-ak", "opsadmin", "-sk", "wrong-secret")
	require.Equal(t, ExitServer, code, stderr)
	require.Contains(t, stderr, "Check signature failed for accessKey=opsadmin")

	code, _, stderr = runOut("clusterList", "-n", ns, "-ak", "opsadmin", "-sk", "ops-secret")
	require.Equal(t, ExitOK, code, stderr)

	code, _, stderr = runOut("clusterList", "-n", ns, "-ak", "opsadmin")
	require.Equal(t, ExitUsage, code, stderr)
	require.Contains(t, stderr, "-ak and -sk")

	require.NoError(t, os.MkdirAll(filepath.Join(home, "conf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "conf", "tools.yml"), []byte("accessKey: opsadmin\nsecretKey: ops-secret\n"), 0o600))
	code, _, stderr = runOut("clusterList", "-n", ns)
	require.Equal(t, ExitOK, code, "tools.yml credentials: %s", stderr)

	require.NoError(t, os.WriteFile(filepath.Join(home, "conf", "tools.yml"), []byte("accessKey: opsadmin\n"), 0o600))
	code, _, stderr = runOut("clusterList", "-n", ns)
	require.Equal(t, ExitUsage, code, stderr)

	code, out, _ := runOut("help")
	require.Equal(t, ExitOK, code)
	require.Contains(t, out, "-ak ACCESS_KEY -sk SECRET_KEY")
}
