package broker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

const brokerACL = `accounts:
  - accessKey: brokeradmin
    secretKey: admin-secret
    admin: true
  - accessKey: producer
    secretKey: producer-secret
    defaultTopicPerm: PUB
  - accessKey: consumer
    secretKey: consumer-secret
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
`

func signedClient(t testing.TB, ak, sk string) *remoting.Client {
	t.Helper()
	cc := remoting.DefaultClientConfig()
	cc.RequestTimeout = 10 * time.Second
	cc.Signer = acl.Signer(ak, sk)
	c := remoting.NewClient(cc)
	t.Cleanup(func() { c.Close() })
	return c
}

// With aclEnable the broker decides every request with plain_acl.yml before its handler:
// refused requests store nothing; the broker signs its own registrations; a file change takes
// effect without a restart; the decisions are on /metrics.
func TestBrokerACL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(brokerACL), 0o600))

	// A name server that requires an admin account's signature on REGISTER_BROKER.
	nsTable, err := acl.Parse([]byte(brokerACL))
	require.NoError(t, err)
	var registered atomic.Int32
	nc := remoting.DefaultServerConfig()
	nc.Addr = "127.0.0.1:0"
	nc.Guard = acl.NewStaticGuard(nsTable, nil)
	ns, err := remoting.NewServer(nc)
	require.NoError(t, err)
	ns.HandleFunc(remoting.RegisterBroker, func(w remoting.ResponseWriter, r *remoting.Command) {
		registered.Add(1)
		_ = w.Write(remoting.NewResponse(r, remoting.Success, ""))
	})
	require.NoError(t, ns.Start())
	t.Cleanup(func() { ns.Close() })

	cfg := testConfig(t)
	cfg.RegistrationSecret = "" // registrations go under the broker's admin account
	cfg.AclEnable, cfg.AclPlainFile = true, path
	cfg.AccessKey, cfg.SecretKey = "brokeradmin", "admin-secret"
	cfg.NamesrvAddr = ns.Addr().String()
	cfg.HTTPPort = freePort(t)
	b := startBroker(t, cfg)
	require.NotNil(t, b.ACL())
	require.Eventually(t, func() bool { return registered.Load() > 0 }, 10*time.Second, 20*time.Millisecond,
		"the broker's signed registration passes the name server's ACL")

	before := b.Store().MaxOffset()
	plain := newUnsignedClient(t, nil)
	resp := send(t, plain, b.Addr(), "AclTopic", 0, "", "unsigned")
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Equal(t, "No accessKey is configured", resp.Remark)

	consumer := signedClient(t, "consumer", "consumer-secret")
	resp = invoke(t, consumer, b.Addr(), remoting.SendMessage, sendExt("AclTopic", 0, props("UNIQ_KEY", "x")), []byte("by a SUB account"))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Contains(t, resp.Remark, "topic:AclTopic")
	wrong := signedClient(t, "producer", "not-the-secret")
	resp = invoke(t, wrong, b.Addr(), remoting.SendMessage, sendExt("AclTopic", 0, props("UNIQ_KEY", "y")), []byte("wrong secret"))
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Equal(t, "Check signature failed for accessKey=producer", resp.Remark)
	resp = invoke(t, consumer, b.Addr(), remoting.UpdateAndCreateTopic, map[string]string{"topic": "Made", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, nil)
	require.Equal(t, remoting.NoPermission, resp.Code)
	require.Contains(t, resp.Remark, "Need admin permission")
	require.Equal(t, before, b.Store().MaxOffset(), "nothing refused was stored")
	_, ok := b.Tables().Topics.Get("Made")
	require.False(t, ok)

	producer := signedClient(t, "producer", "producer-secret")
	resp = invoke(t, producer, b.Addr(), remoting.SendMessage, sendExt("AclTopic", 0, props("UNIQ_KEY", "z")), []byte("signed"))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Greater(t, b.Store().MaxOffset(), before)

	// The producer loses PUB in the file: refused from the next check on, no restart.
	require.NoError(t, os.WriteFile(path+".new", []byte(strings.Replace(brokerACL, "defaultTopicPerm: PUB", "defaultTopicPerm: DENY", 1)), 0o600))
	require.NoError(t, os.Rename(path+".new", path))
	require.Eventually(t, func() bool {
		resp := invoke(t, producer, b.Addr(), remoting.SendMessage, sendExt("AclTopic", 0, props("UNIQ_KEY", "w")), []byte("after"))
		return resp.Code == remoting.NoPermission
	}, 15*time.Second, 100*time.Millisecond)

	metrics := httpGet(t, "http://"+b.HTTPAddr()+"/metrics", 200)
	require.Contains(t, metrics, `rmqha_broker_acl_requests_total{reason="no_access_key",result="denied"} 1`)
	require.Contains(t, metrics, `rmqha_broker_acl_reloads_total{result="ok"} 1`)
	require.Regexp(t, `(?m)^rmqha_broker_acl_last_reload_ok 1$`, metrics, "the sample line, not the HELP text that starts the same")
}

func TestBrokerACLConfig(t *testing.T) {
	cfg := testConfig(t)
	cfg.AccessKey = "only-the-access-key"
	require.ErrorContains(t, cfg.Validate(), "secretKey")
	cfg = testConfig(t)
	cfg.AclEnable, cfg.AclPlainFile = true, ""
	require.ErrorContains(t, cfg.Validate(), "aclPlainFile")

	// aclEnable without a usable file refuses to start.
	cfg = testConfig(t)
	cfg.AclEnable, cfg.AclPlainFile = true, filepath.Join(t.TempDir(), "missing.yml")
	b, err := New(cfg, testLogger())
	require.NoError(t, err)
	err = b.Start()
	require.ErrorContains(t, err, "aclEnable=true")
	bad := filepath.Join(t.TempDir(), "bad.yml")
	require.NoError(t, os.WriteFile(bad, []byte("accounts:\n  - accessKey: short\n    secretKey: x\n"), 0o600))
	cfg.AclPlainFile = bad
	b, err = New(cfg, testLogger())
	require.NoError(t, err)
	require.ErrorIs(t, b.Start(), acl.ErrInvalidAccount)
	_ = b.Shutdown(context.Background())
	require.Equal(t, "conf/plain_acl.yml", DefaultConfig().AclPlainFile)
	require.False(t, DefaultConfig().AclEnable, "off by default, as in RocketMQ")
}

// BenchmarkSendACL: 1 KiB SEND_MESSAGE over loopback with 64 concurrent callers, ACL off and on
// (the client signs, the broker verifies): what the guard costs a send, in msgs/s.
func BenchmarkSendACL(b *testing.B) {
	path := filepath.Join(b.TempDir(), "plain_acl.yml")
	require.NoError(b, os.WriteFile(path, []byte(brokerACL), 0o600))
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			cfg := testConfig(b)
			cfg.MappedFileSizeCommitLog = 64 << 20
			cfg.AclEnable, cfg.AclPlainFile = on, path
			m := startBroker(b, cfg)
			c := newTestClient(b)
			if on {
				c = signedClient(b, "producer", "producer-secret")
			}
			req := remoting.NewRequest(remoting.SendMessage, sendExt("Bench", 0, "TAGS\x01a\x02"), make([]byte, 1024))
			_, err := c.Invoke(context.Background(), m.Addr(), req)
			require.NoError(b, err)
			var bad atomic.Int64
			b.SetParallelism(32)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Invoke(context.Background(), m.Addr(), req)
					if err != nil || resp.Code != remoting.Success {
						bad.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
			b.StopTimer()
			require.Zero(b, bad.Load())
		})
	}
}
