package nameserver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/stretchr/testify/require"
)

const namesrvACL = `accounts:
  - accessKey: brokeradmin
    secretKey: admin-secret
    admin: true
  - accessKey: appclient
    secretKey: client-secret
    defaultTopicPerm: PUB|SUB
`

// With aclEnable every request needs a known account's signature; registrations and other
// writes need an admin account; route lookups any account. A further guard runs after the ACL
// guard, only on what it admitted.
func TestNameServerACL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(namesrvACL), 0o600))
	cfg := DefaultConfig()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.ListenPort = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg.BindAddress = "127.0.0.1"
	cfg.AclEnable, cfg.AclPlainFile = true, path
	var later atomic.Int32 // requests the extra guard saw
	cfg.Guards = []remoting.Guard{remoting.GuardFunc(func(_ *remoting.ServerConn, r *remoting.Command) *remoting.Command {
		later.Add(1)
		if r.Code == remoting.RegisterBroker && r.Ext("brokerName") == "refused-by-next-guard" {
			return remoting.NewResponse(nil, remoting.NoPermission, "next guard says no")
		}
		return nil
	})}
	s, err := New(cfg, registry.NewMemory())
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() { s.Close() })
	require.True(t, s.ACLEnabled())
	addr := s.Addr().String()

	client := func(ak, sk string) *remoting.Client {
		cc := remoting.DefaultClientConfig()
		cc.RequestTimeout = 3 * time.Second
		if ak != "" {
			cc.Signer = acl.Signer(ak, sk)
		}
		c := remoting.NewClient(cc)
		t.Cleanup(func() { c.Close() })
		return c
	}
	call := func(c *remoting.Client, req *remoting.Command) *remoting.Command {
		resp, err := c.Invoke(context.Background(), addr, req)
		require.NoError(t, err)
		return resp
	}
	route := func() *remoting.Command {
		return remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil)
	}
	anon, app, admin, wrong := client("", ""), client("appclient", "client-secret"), client("brokeradmin", "admin-secret"), client("brokeradmin", "guessed-secret")

	resp := call(anon, unsignedRegisterReq("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "TopicTest"))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Equal(t, "No accessKey is configured", resp.Remark)
	resp = call(wrong, registerReq("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "TopicTest"))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Equal(t, "Check signature failed for accessKey=brokeradmin", resp.Remark)
	resp = call(app, registerReq("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "TopicTest"))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Contains(t, resp.Remark, "Need admin permission for request code=103 (REGISTER_BROKER)")
	require.Zero(t, later.Load(), "refused requests never reach the next guard")
	require.Empty(t, s.reg.Status().Brokers, "no refused registration reached the registry")

	resp = call(admin, registerReq("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "TopicTest"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = call(admin, registerReq("DefaultCluster", "refused-by-next-guard", 0, "127.0.0.1:10912", "TopicTest"))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Equal(t, "next guard says no", resp.Remark)

	resp = call(anon, route())
	require.Equal(t, remoting.NoPermission, resp.Code)
	resp = call(app, route())
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = call(app, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	resp = call(app, remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"brokerName": "broker-a", "brokerId": "0", "clusterName": "DefaultCluster", "brokerAddr": "127.0.0.1:10911"}, nil))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Len(t, s.reg.Status().Brokers, 1, "a non-admin account cannot unregister a broker")
	st := s.ACL().Stats()
	require.Equal(t, uint64(3), st.Decisions["admin_required"]+st.Decisions["bad_signature"])
}

func TestNameServerACLConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AclEnable, cfg.AclPlainFile = true, ""
	require.ErrorContains(t, cfg.Validate(), "aclPlainFile")
	cfg.AclPlainFile = filepath.Join(t.TempDir(), "missing.yml")
	_, err := New(cfg, registry.NewMemory())
	require.ErrorIs(t, err, os.ErrNotExist, "aclEnable without a usable file refuses to start")
	require.False(t, DefaultConfig().AclEnable)
}

// ACL on and a registration secret set: brokers may register either way — signed with the
// registration secret under rmqha-broker (checked by the registration handler, not the ACL
// file) or with an admin account — and nothing else gets through.
func TestNameServerACLWithRegistrationSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(namesrvACL), 0o600))
	cfg := DefaultConfig()
	cfg.ListenPort = freePort(t)
	cfg.BindAddress = "127.0.0.1"
	cfg.AclEnable, cfg.AclPlainFile = true, path
	cfg.RegistrationSecret = testSecret
	s, err := New(cfg, registry.NewMemory())
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() { s.Close() })
	cli := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { cli.Close() })
	call := func(req *remoting.Command) *remoting.Command {
		resp, err := cli.Invoke(context.Background(), s.Addr().String(), req)
		require.NoError(t, err)
		return resp
	}

	forged := unsignedRegisterReq("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "TopicTest")
	acl.PrepareRegistration(forged, nextTS())
	acl.SignCommand(forged, acl.BrokerAccessKey, "a-guessed-registration-secret")
	resp := call(forged)
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Empty(t, s.reg.Status().Brokers)

	resp = call(registerReq("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "TopicTest"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)

	admin := unsignedRegisterReq("DefaultCluster", "broker-a", 1, "127.0.0.1:10921", "TopicTest")
	acl.PrepareRegistration(admin, nextTS())
	acl.SignCommand(admin, "brokeradmin", "admin-secret")
	resp = call(admin)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Len(t, s.reg.Status().Brokers, 2)

	// The secret's access key opens nothing but registration: a route lookup under it is the
	// ACL file's business, which does not know it.
	route := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil)
	acl.SignCommand(route, acl.BrokerAccessKey, testSecret)
	resp = call(route)
	require.Equal(t, remoting.NoPermission, resp.Code)
}
