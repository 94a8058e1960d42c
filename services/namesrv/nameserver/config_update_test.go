package nameserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/libs/remoting"
)

// TestUpdateNamesrvConfig: UPDATE_NAMESRV_CONFIG writes the config file in place (comments
// kept), applies logLevel at once and the rest at the next start; the black list (RocketMQ's
// and the security keys) is NO_PERMISSION, unknown keys and invalid values change nothing,
// and without a config file it is refused with a remark.
func TestUpdateNamesrvConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "namesrv.conf")
	orig := "# the name server\nlistenPort=9876\nlogLevel=info\nserverWorkerThreads=8\n"
	require.NoError(t, os.WriteFile(file, []byte(orig), 0o644))
	var level string
	s, c := start(t, func(cfg *Config) {
		cfg.ConfigFile = file
		cfg.SetLogLevel = func(l string) error { level = l; return nil }
	})
	addr := s.Addr().String()
	update := func(body string) *remoting.Command {
		return call(t, c, addr, adminReq(remoting.UpdateNamesrvConfig, nil, []byte(body)))
	}

	resp := update("logLevel=debug\nlistenPort=9999\nmaxClusters=8\n")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Contains(t, resp.Remark, "applied now: logLevel")
	require.Contains(t, resp.Remark, "applied at the next start: listenPort,maxClusters")
	require.Equal(t, "debug", level)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, "# the name server\nlistenPort=9999\nlogLevel=debug\nserverWorkerThreads=8\nmaxClusters=8\n", string(got))
	// The file starts a name server with the new values.
	next := DefaultConfig()
	_, err = props.LoadOptions(&next, "namesrv", []string{"-c", file}, nil, os.Stderr, props.Options{Foreign: RocketMQKeys().Foreign()})
	require.NoError(t, err)
	require.Equal(t, 9999, next.ListenPort)
	require.Equal(t, 8, next.MaxClusters)
	// GET_NAMESRV_CONFIG shows the running values: the new log level, the old port.
	text := string(call(t, c, addr, adminReq(remoting.GetNamesrvConfig, nil, nil)).Body)
	require.Contains(t, text, "logLevel=debug\n")
	require.NotContains(t, text, "listenPort=9999\n")

	for _, body := range []string{"kvConfigPath=/tmp/x", "configStorePath=/tmp/x", "configBlackList=", "registrationAllowUnauthenticated=true",
		"registrationSecret=another", "aclEnable=false", "tls.server.mode=disabled", "logLevel=warn\nregistryBackend=consul"} {
		resp := update(body)
		require.Equal(t, remoting.NoPermission, resp.Code, body)
		require.Equal(t, "Can not update config in black list.", resp.Remark)
	}
	for body, remark := range map[string]string{
		"serverWorkerThreads=16": "no meaning on this name server",
		"listenPortt=1":          "no meaning on this name server",
		"listenPort=70000":       "listenPort 70000 out of range",
		"maxClusters=many":       "maxClusters",
	} {
		resp := update(body)
		require.Equal(t, remoting.SystemError, resp.Code, body)
		require.Contains(t, resp.Remark, remark, body)
	}
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, string(got), string(after), "refused updates change nothing")
	require.Equal(t, remoting.Success, update("").Code, "an empty body is a no-op, as in RocketMQ")

	// Without a config file there is nowhere to persist.
	s2, c2 := start(t)
	resp = call(t, c2, s2.Addr().String(), adminReq(remoting.UpdateNamesrvConfig, nil, []byte("logLevel=debug")))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.True(t, strings.Contains(resp.Remark, "without a config file"), resp.Remark)
}
