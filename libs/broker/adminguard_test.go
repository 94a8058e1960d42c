package broker

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// With ACL off, every admin write must be signed with the registration secret: unsigned,
// signed with another secret or under another access key it is answered NO_PERMISSION,
// changes nothing and is counted; signed it is served. Sends and lookups stay open.
func TestAdminWritesNeedTheRegistrationSecret(t *testing.T) {
	cfg := testConfig(t)
	cfg.HTTPPort = freePort(t)
	b := startBroker(t, cfg)
	signed := newTestClient(t)
	unsigned := newUnsignedClient(t, nil)
	wrongSecret := newUnsignedClient(t, acl.Signer(acl.BrokerAccessKey, testRegistrationSecret+"-not"))
	otherKey := newUnsignedClient(t, acl.Signer("rocketmq2", testRegistrationSecret))

	topic := map[string]string{"topic": "AdminGuardTopic", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}
	reset := map[string]string{"topic": "AdminGuardTopic", "group": "g", "timestamp": "0", "isForce": "true"}
	writes := []struct {
		code int32
		ext  map[string]string
		body []byte
	}{
		{remoting.UpdateAndCreateTopic, topic, nil},
		{remoting.UpdateBrokerConfig, nil, []byte("brokerPermission=4\n")},
		{remoting.DeleteTopicInBroker, map[string]string{"topic": "AdminGuardTopic"}, nil},
		{remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"g-admin"}`)},
		{remoting.DeleteSubscriptionGroup, map[string]string{"groupName": "g-admin"}, nil},
		{remoting.InvokeBrokerToResetOffset, reset, nil},
		{remoting.CloneGroupOffset, map[string]string{"srcGroup": "a", "destGroup": "b", "topic": "AdminGuardTopic"}, nil},
	}
	for _, c := range []struct {
		name   string
		client *remoting.Client
		remark string
	}{
		{"unsigned", unsigned, "sign it with the registration secret"},
		{"wrong secret", wrongSecret, "signature does not verify"},
		{"other access key", otherKey, "is not rmqha-broker"},
	} {
		for _, w := range writes {
			r := invoke(t, c.client, b.Addr(), w.code, w.ext, w.body)
			require.Equal(t, remoting.NoPermission, r.Code, "%s %s: %s", c.name, remoting.RequestName(w.code), r.Remark)
			require.Contains(t, r.Remark, c.remark, "%s %s", c.name, remoting.RequestName(w.code))
		}
	}
	_, ok := b.Tables().Topics.Get("AdminGuardTopic")
	require.False(t, ok, "a refused UPDATE_AND_CREATE_TOPIC created the topic")
	require.Equal(t, int32(6), b.Config().BrokerPermission, "a refused UPDATE_BROKER_CONFIG changed the broker")

	// Sends, lookups and consumer offset commits need no signature.
	r := invoke(t, unsigned, b.Addr(), remoting.GetBrokerRuntimeInfo, nil, nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)

	r = invoke(t, signed, b.Addr(), remoting.UpdateAndCreateTopic, topic, nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	_, ok = b.Tables().Topics.Get("AdminGuardTopic")
	require.True(t, ok)

	m := scrape(t, b)
	for _, w := range writes {
		require.Equal(t, 3.0, m[`rmqha_broker_admin_refused_total{request="`+remoting.RequestName(w.code)+`"}`], remoting.RequestName(w.code))
	}
}

// adminAllowUnauthenticated opens the admin writes to unsigned requests (signed ones still
// verify); without a registration secret and without it, they are refused.
func TestAdminAllowUnauthenticated(t *testing.T) {
	cfg := testConfig(t)
	cfg.AdminAllowUnauthenticated = true
	b := startBroker(t, cfg)
	unsigned := newUnsignedClient(t, nil)
	topic := map[string]string{"topic": "OpenAdminTopic", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}
	r := invoke(t, unsigned, b.Addr(), remoting.UpdateAndCreateTopic, topic, nil)
	require.Equal(t, remoting.Success, r.Code, r.Remark)
	bad := newUnsignedClient(t, acl.Signer(acl.BrokerAccessKey, testRegistrationSecret+"-not"))
	r = invoke(t, bad, b.Addr(), remoting.UpdateAndCreateTopic, topic, nil)
	require.Equal(t, remoting.NoPermission, r.Code, "a wrong signature is refused even when unsigned requests pass")

	cfg = testConfig(t)
	cfg.RegistrationSecret = ""
	b = startBroker(t, cfg)
	r = invoke(t, newTestClient(t), b.Addr(), remoting.UpdateAndCreateTopic, topic, nil)
	require.Equal(t, remoting.NoPermission, r.Code)
	require.Contains(t, r.Remark, "no registrationSecret")
}

func newUnsignedClient(t testing.TB, signer func(*remoting.Command)) *remoting.Client {
	t.Helper()
	cc := remoting.DefaultClientConfig()
	cc.RequestTimeout = 10 * time.Second
	cc.Signer = signer
	c := remoting.NewClient(cc)
	t.Cleanup(func() { c.Close() })
	return c
}
