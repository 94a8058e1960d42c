package nameserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/require"
)

const (
	mAddr = "127.0.0.1:10911"
	sAddr = "127.0.0.1:10921"
	xAddr = "127.0.0.1:20911" // the stranger
)

func TestConfigRegistrationKeys(t *testing.T) {
	cfg := DefaultConfig()
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrNoRegistrationSecret)
	for _, key := range []string{"registrationSecret", "registrationSecretFile", "registrationAllowUnauthenticated=true"} {
		require.Contains(t, err.Error(), key)
	}

	cfg.RegistrationAllowUnauthenticated = true
	require.NoError(t, cfg.Validate())

	dir := t.TempDir()
	file := filepath.Join(dir, "registration.secret")
	require.NoError(t, os.WriteFile(file, []byte(testSecret+"\n"), 0o600))
	cfg = DefaultConfig()
	cfg.RegistrationSecretFile = file
	require.NoError(t, cfg.Validate())
	s, err := cfg.registrationSecret()
	require.NoError(t, err)
	require.Equal(t, testSecret, s, "trimmed")

	for name, mod := range map[string]func(c *Config){
		"both":       func(c *Config) { c.RegistrationSecret = testSecret },
		"unreadable": func(c *Config) { c.RegistrationSecretFile = filepath.Join(dir, "missing") },
		"short": func(c *Config) {
			c.RegistrationSecretFile = ""
			c.RegistrationSecret = "too-short"
		},
		"skew": func(c *Config) { c.RegistrationMaxClockSkew = time.Millisecond },
		"body": func(c *Config) { c.MaxRegistrationBodySize = c.MaxFrameSize + 1 },
		"zero": func(c *Config) { c.MaxBrokersPerCluster = 0 },
	} {
		c := cfg
		mod(&c)
		require.Error(t, c.Validate(), name)
		_, err := New(c, registry.NewMemory())
		require.Error(t, err, name)
	}
}

func invoke(t *testing.T, c *remoting.Client, s *Server, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, s.Addr().String(), req)
	require.NoError(t, err)
	return resp
}

func newClient(t *testing.T) *remoting.Client {
	c := remoting.NewClient(remoting.DefaultClientConfig())
	t.Cleanup(func() { c.Close() })
	return c
}

func refused(t *testing.T, resp *remoting.Command, code int32, remark string) {
	t.Helper()
	require.Equal(t, code, resp.Code, "%s %s", remoting.ResponseName(resp.Code), resp.Remark)
	require.Contains(t, resp.Remark, remark)
}

// routeIs fails unless topic routes to exactly master and slave.
func routeIs(t *testing.T, c *remoting.Client, s *Server, topic, master, slave string) {
	t.Helper()
	resp := invoke(t, c, s, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	rd, err := route.DecodeTopicRouteData(resp.Body)
	require.NoError(t, err)
	require.Len(t, rd.BrokerDatas, 1)
	require.Equal(t, map[int64]string{0: master, 1: slave}, rd.BrokerDatas[0].BrokerAddrs)
}

func withEpoch(req *remoting.Command, epoch string) *remoting.Command {
	req.ExtFields["epoch"] = epoch
	return req
}

// A real group: master and slave on their own connections, both signed.
func realGroup(t *testing.T, s *Server) (master, slave *remoting.Client) {
	master, slave = newClient(t), newClient(t)
	resp := invoke(t, master, s, sign(withEpoch(unsignedRegisterReq("C", "b", 0, mAddr, "T"), "5")))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, slave, s, registerReq("C", "b", 1, sAddr))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, haOf(mAddr), resp.Ext("haServerAddr"))
	return master, slave
}

func TestStrangerWithoutSecretChangesNothing(t *testing.T) {
	s, c := start(t)
	_, slave := realGroup(t, s)
	x := newClient(t)

	for name, req := range map[string]*remoting.Command{
		"higher epoch":          withEpoch(unsignedRegisterReq("C", "b", 0, xAddr, "T"), "999999"),
		"brokerId 1 at master":  unsignedRegisterReq("C", "b", 1, mAddr),
		"master, empty topics":  unsignedRegisterReq("C", "b", 0, mAddr),
		"new group":             unsignedRegisterReq("C", "evil", 0, xAddr, "T"),
		"unregister the master": remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "C", "brokerName": "b", "brokerId": "0", "brokerAddr": mAddr}, nil),
	} {
		refused(t, invoke(t, x, s, req), remoting.NoPermission, "registrationSecret")
		_ = name
	}
	// Signed with the wrong secret, or under another access key.
	req := unsignedRegisterReq("C", "b", 0, xAddr, "T")
	acl.PrepareRegistration(req, nextTS())
	acl.SignCommand(req, acl.BrokerAccessKey, "not-the-secret-at-all")
	refused(t, invoke(t, x, s, req), remoting.NoPermission, "signature does not verify")
	req = unsignedRegisterReq("C", "b", 0, xAddr, "T")
	acl.PrepareRegistration(req, nextTS())
	acl.SignCommand(req, "RocketMQ", testSecret)
	refused(t, invoke(t, x, s, req), remoting.NoPermission, "access key")
	// Signed without the registration fields (a plain RocketMQ signature).
	req = unsignedRegisterReq("C", "b", 0, xAddr, "T")
	acl.SignCommand(req, acl.BrokerAccessKey, testSecret)
	refused(t, invoke(t, x, s, req), remoting.NoPermission, "registrationTime")

	routeIs(t, c, s, "T", mAddr, sAddr)
	resp := invoke(t, slave, s, registerReq("C", "b", 1, sAddr))
	require.Equal(t, haOf(mAddr), resp.Ext("haServerAddr"), "slave pointed elsewhere")
	require.Len(t, s.reg.ClusterInfo().BrokerAddrTable, 1)
}

// A recorded registration is refused when played again, whichever connection carries it:
// the same request, an older one after a newer was accepted, one outside the clock-skew
// window, and one whose values were re-split or whose code was changed.
func TestReplayedRegistrationsRefused(t *testing.T) {
	now := time.Now()
	s, c := start(t, func(cfg *Config) { cfg.Now = func() time.Time { return now } })
	master := newClient(t)
	old := signAt(unsignedRegisterReq("C", "b", 0, mAddr, "T"), now.UnixMilli()-10)
	require.Equal(t, remoting.Success, invoke(t, master, s, old).Code)
	x := newClient(t)
	refused(t, invoke(t, x, s, old), remoting.NoPermission, "not after")
	refused(t, invoke(t, master, s, old), remoting.NoPermission, "not after")

	newer := signAt(unsignedRegisterReq("C", "b", 0, mAddr, "T", "U"), now.UnixMilli())
	require.Equal(t, remoting.Success, invoke(t, master, s, newer).Code)
	older := signAt(unsignedRegisterReq("C", "b", 0, mAddr, "T"), now.UnixMilli()-5)
	refused(t, invoke(t, x, s, older), remoting.NoPermission, "not after")

	for _, d := range []time.Duration{-61 * time.Second, 61 * time.Second} {
		req := signAt(unsignedRegisterReq("C", "b2", 0, xAddr, "V"), now.Add(d).UnixMilli())
		refused(t, invoke(t, x, s, req), remoting.NoPermission, "registrationMaxClockSkew")
	}

	// The recorded registration turned into an UNREGISTER_BROKER: the code is bound.
	unreg := signAt(unsignedRegisterReq("C", "b", 0, mAddr, "T"), now.UnixMilli()+1)
	unreg.Code = remoting.UnregisterBroker
	refused(t, invoke(t, x, s, unreg), remoting.NoPermission, "registrationDigest")
	// Values re-split between neighbouring keys: the RocketMQ signature still verifies.
	resplit := signAt(unsignedRegisterReq("C", "b", 0, "127.0.0.1:1091", "T"), now.UnixMilli()+2)
	resplit.ExtFields["brokerAddr"], resplit.ExtFields["brokerId"] = "127.0.0.1:109", "10"
	require.True(t, acl.VerifySignature(resplit, testSecret))
	refused(t, invoke(t, x, s, resplit), remoting.NoPermission, "registrationDigest")

	resp := invoke(t, c, s, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "U"}, nil))
	require.Equal(t, remoting.Success, resp.Code, "the newer registration stands")
}

// Authenticated brokers too: a connection unregisters only what it registered, does not
// remove the master by registering brokerId 1 at its address, and empties a group's topics
// only over the master's own connection.
func TestConnectionsOwnTheirRegistrations(t *testing.T) {
	s, c := start(t)
	master, _ := realGroup(t, s)
	other := newClient(t) // holds the secret, but is not the master's connection

	unreg := func(id, addr string) *remoting.Command {
		return sign(remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "C", "brokerName": "b", "brokerId": id, "brokerAddr": addr}, nil))
	}
	refused(t, invoke(t, other, s, unreg("0", mAddr)), remoting.NoPermission, "another connection")
	refused(t, invoke(t, other, s, registerReq("C", "b", 1, mAddr)), remoting.NoPermission, "another connection")
	refused(t, invoke(t, other, s, registerReq("C", "b", 0, mAddr)), remoting.NoPermission, "empty topic table")
	routeIs(t, c, s, "T", mAddr, sAddr)

	// The master's own connection: topics deleted, then unregistered.
	require.Equal(t, remoting.Success, invoke(t, master, s, registerReq("C", "b", 0, mAddr)).Code)
	resp := invoke(t, c, s, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil))
	require.Equal(t, remoting.TopicNotExist, resp.Code)
	require.Equal(t, remoting.Success, invoke(t, master, s, unreg("0", mAddr)).Code)
}

// With registrationAllowUnauthenticated unsigned registrations are admitted, but their
// declared epochs count for nothing and they may not change another connection's entries.
func TestUnauthenticatedAllowedButPowerless(t *testing.T) {
	s, c := start(t, func(cfg *Config) { cfg.RegistrationSecret, cfg.RegistrationAllowUnauthenticated = "", true })
	master, slave := newClient(t), newClient(t)
	require.Equal(t, remoting.Success, invoke(t, master, s, unsignedRegisterReq("C", "b", 0, mAddr, "T")).Code)
	require.Equal(t, remoting.Success, invoke(t, slave, s, unsignedRegisterReq("C", "b", 1, sAddr)).Code)
	x := newClient(t)
	refused(t, invoke(t, x, s, withEpoch(unsignedRegisterReq("C", "b", 0, xAddr, "T"), "999999")), remoting.SystemError, "another master")
	refused(t, invoke(t, x, s, unsignedRegisterReq("C", "b", 1, mAddr)), remoting.NoPermission, "another connection")
	refused(t, invoke(t, x, s, unsignedRegisterReq("C", "b", 0, mAddr)), remoting.NoPermission, "another connection")
	refused(t, invoke(t, x, s, remoting.NewRequest(remoting.UnregisterBroker, map[string]string{"clusterName": "C", "brokerName": "b", "brokerId": "0", "brokerAddr": mAddr}, nil)),
		remoting.NoPermission, "another connection")
	routeIs(t, c, s, "T", mAddr, sAddr)
}

func TestBoundsRefusedBeforeStored(t *testing.T) {
	s, c := start(t, func(cfg *Config) { cfg.MaxRegistrationBodySize = 4096; cfg.MaxTopicsPerRegistration = 2 })
	realGroup(t, s)
	x := newClient(t)
	huge := strings.Repeat("c", 1<<20)
	refused(t, invoke(t, x, s, registerReq(huge, "b9", 0, xAddr, "T")), remoting.SystemError, "maxClusterNameLength")
	refused(t, invoke(t, x, s, registerReq(huge, "b9", 0, xAddr, "T")), remoting.SystemError, "maxClusterNameLength")
	refused(t, invoke(t, x, s, registerReq("C", "b9", 0, "127.0.0.1", "T")), remoting.SystemError, "host:port")
	refused(t, invoke(t, x, s, registerReq("C", "b9", 0, xAddr, "T", "U", "V")), remoting.SystemError, "maxTopicsPerRegistration")
	refused(t, invoke(t, x, s, registerReq("C", "b9", 0, xAddr, strings.Repeat("t", 128))), remoting.SystemError, "127")
	req := unsignedRegisterReq("C", "b9", 0, xAddr, "T")
	req.Body = append(req.Body, make([]byte, 4096)...)
	req.ExtFields["bodyCrc32"] = "0"
	refused(t, invoke(t, x, s, sign(req)), remoting.SystemError, "maxRegistrationBodySize")
	require.Len(t, s.reg.ClusterInfo().BrokerAddrTable, 1)
	routeIs(t, c, s, "T", mAddr, sAddr)
}

// Refusals are logged with the peer's address, at most burst lines per interval.
func TestRefusalsLoggedRateLimited(t *testing.T) {
	logger, hook := test.NewNullLogger()
	s, _ := start(t, func(cfg *Config) { cfg.Logger = logger })
	x := newClient(t)
	for i := 0; i < 50; i++ {
		refused(t, invoke(t, x, s, unsignedRegisterReq("C", "b", 0, xAddr, "T")), remoting.NoPermission, "not signed")
	}
	var lines int
	for _, e := range hook.AllEntries() {
		if e.Message == "broker registration refused" {
			lines++
			require.Equal(t, logrus.WarnLevel, e.Level)
			require.NotEmpty(t, e.Data["peer"])
			require.Equal(t, "unsigned", e.Data["reason"])
		}
	}
	require.Equal(t, 10, lines)

	l := &logLimiter{interval: time.Second, burst: 2}
	t0 := time.Unix(100, 0)
	for i, want := range []bool{true, true, false, false} {
		ok, _ := l.allow(t0)
		require.Equal(t, want, ok, i)
	}
	ok, suppressed := l.allow(t0.Add(time.Second))
	require.True(t, ok)
	require.Equal(t, 2, suppressed)
}

func TestFreshness(t *testing.T) {
	f := newFreshness(time.Minute)
	f.max = 2
	now := time.Unix(1000, 0)
	ms := now.UnixMilli()
	require.NoError(t, f.admit("a", ms, now))
	require.ErrorIs(t, f.admit("a", ms, now), ErrReplayed)
	require.ErrorIs(t, f.admit("a", ms-1, now), ErrReplayed)
	require.NoError(t, f.admit("a", ms+1, now))
	require.ErrorIs(t, f.admit("b", ms-time.Minute.Milliseconds()-1, now), ErrClockSkew)
	require.ErrorIs(t, f.admit("b", ms+time.Minute.Milliseconds()+1, now), ErrClockSkew)
	require.NoError(t, f.admit("b", ms, now))
	require.ErrorIs(t, f.admit("c", ms, now), ErrTooManyBrokers)
	// Entries older than the window make room; the window itself refuses their replays.
	later := now.Add(2 * time.Minute)
	require.NoError(t, f.admit("c", later.UnixMilli(), later))
	require.ErrorIs(t, f.admit("a", ms+1, later), ErrClockSkew)
}
