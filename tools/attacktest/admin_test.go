package attacktest

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// A stranger who reaches the brokers' remoting ports with RocketMQ's admin requests, unsigned
// or signed with a guessed secret, used to be able to take the master out of the routes
// (brokerPermission), delete or re-permission a topic, move a group's offsets back to the
// start, clone them, and delete or disable the group. Every one is answered NO_PERMISSION on
// master and slave; afterwards the route, the topic and the committed offset are as before, a
// normal send is SEND_OK and every acknowledged message is intact.
func TestStrangerAdminWrites(t *testing.T) {
	f := Start(t, Config{})
	const topic, group = "AdminVictim", "admin-victim-g"
	f.CreateTopic(t, topic, 4)
	for i := 0; i < 8; i++ {
		f.SendOK(t, topic, []byte("victim"))
	}
	// A consumer's own offset commit needs no signature (as in RocketMQ).
	commit := map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": "2"}
	resp, err := Invoke(newClient(t, nil), f.MasterAddr, remoting.UpdateConsumerOffset, commit, nil)
	require.NoError(t, err)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	before, err := f.Route(topic)
	require.NoError(t, err)

	writes := []struct {
		code int32
		ext  map[string]string
		body []byte
	}{
		{remoting.UpdateBrokerConfig, nil, []byte("brokerPermission=4\n")},
		{remoting.DeleteTopicInBroker, map[string]string{"topic": topic}, nil},
		{remoting.UpdateAndCreateTopic, map[string]string{"topic": topic, "readQueueNums": "1", "writeQueueNums": "1", "perm": "2"}, nil},
		{remoting.InvokeBrokerToResetOffset, map[string]string{"topic": topic, "group": group, "timestamp": "0", "isForce": "true"}, nil},
		{remoting.CloneGroupOffset, map[string]string{"srcGroup": group, "destGroup": "attacker-copy", "topic": topic}, nil},
		{remoting.UpdateAndCreateSubscriptionGroup, nil, []byte(`{"groupName":"` + group + `","consumeEnable":false}`)},
		{remoting.DeleteSubscriptionGroup, map[string]string{"groupName": group}, nil},
	}
	strangers := map[string]*remoting.Client{
		"unsigned":       newClient(t, nil),
		"guessed secret": newClient(t, acl.Signer(acl.BrokerAccessKey, "0123456789abcdef0123456789abcdef")),
		"other account":  newClient(t, acl.Signer("RocketMQ", "12345678")),
	}
	refused := 0
	for name, c := range strangers {
		for _, addr := range []string{f.MasterAddr, f.SlaveAddr} {
			for _, w := range writes {
				resp, err := Invoke(c, addr, w.code, w.ext, w.body)
				require.NoError(t, err)
				require.Equal(t, remoting.NoPermission, resp.Code, "%s %s to %s: %s", name, remoting.RequestName(w.code), addr, resp.Remark)
				refused++
			}
		}
	}

	after, err := f.Route(topic)
	require.NoError(t, err)
	require.Equal(t, before.QueueDatas, after.QueueDatas, "the route changed")
	require.Equal(t, 6, after.QueueDatas[0].Perm)
	off, err := f.ConsumerOffset(f.MasterAddr, group, topic, 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, off, "the committed offset moved")
	f.SendOK(t, topic, []byte("after"))
	var counted float64
	for _, http := range []string{f.MasterHTTP, f.SlaveHTTP} {
		for _, w := range writes {
			n, err := Metric(http, `rmqha_broker_admin_refused_total{request="`+remoting.RequestName(w.code)+`"}`)
			require.NoError(t, err)
			counted += n
		}
	}
	require.EqualValues(t, refused, counted)
	f.CheckInvariants(t)
}

func newClient(t *testing.T, signer func(*remoting.Command)) *remoting.Client {
	t.Helper()
	cc := remoting.DefaultClientConfig()
	cc.RequestTimeout = 20 * time.Second
	cc.Signer = signer
	c := remoting.NewClient(cc)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
