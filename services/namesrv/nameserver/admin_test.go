package nameserver

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

// adminReq is an admin request signed with testSecret, as mqadmin -registrationSecretFile sends it.
func adminReq(code int32, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	acl.SignCommand(req, acl.BrokerAccessKey, testSecret)
	return req
}

func call(t *testing.T, c *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	resp, err := c.Invoke(context.Background(), addr, req)
	require.NoError(t, err)
	return resp
}

func routeOf(t *testing.T, c *remoting.Client, addr, topic string) (route.TopicRouteData, int32) {
	t.Helper()
	resp := call(t, c, addr, remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if resp.Code != remoting.Success {
		return route.TopicRouteData{}, resp.Code
	}
	rd, err := route.DecodeTopicRouteData(resp.Body)
	require.NoError(t, err)
	return rd, resp.Code
}

func permsOf(rd route.TopicRouteData) map[string]int32 {
	out := map[string]int32{}
	for _, q := range rd.QueueDatas {
		out[q.BrokerName] = q.Perm
	}
	return out
}

// registerVersioned is a signed master registration whose topic table has version counter.
func registerVersioned(cluster, name, addr string, counter int64, topics ...string) *remoting.Command {
	w := route.TopicConfigSerializeWrapper{TopicConfigTable: map[string]route.TopicConfig{}, DataVersion: route.DataVersion{Timestamp: 1, Counter: counter}}
	for _, tp := range topics {
		w.TopicConfigTable[tp] = route.NewTopicConfig(tp)
	}
	body := route.AppendRegisterBrokerBody(nil, route.RegisterBrokerBody{TopicConfigSerializeWrapper: w})
	return sign(remoting.NewRequest(remoting.RegisterBroker, map[string]string{
		"brokerName": name, "brokerAddr": addr, "clusterName": cluster, "haServerAddr": haOf(addr),
		"brokerId": "0", "compressed": "false", "bodyCrc32": strconv.FormatInt(int64(route.BodyCRC32(body)), 10),
	}, body))
}

// TestWipeAndAddWritePerm: wipe clears PERM_WRITE of one broker name's queue data and answers
// the topic count; add sets PERM_READ|PERM_WRITE; a changed registration of the master
// restores what it registers (RocketMQ rebuilds the queue data then).
func TestWipeAndAddWritePerm(t *testing.T) {
	s, c := start(t)
	addr := s.Addr().String()
	require.Equal(t, remoting.Success, call(t, c, addr, registerVersioned("C1", "broker-a", "127.0.0.1:10911", 1, "T1", "T2")).Code)
	require.Equal(t, remoting.Success, call(t, c, addr, registerVersioned("C1", "broker-b", "127.0.0.1:10931", 1, "T1")).Code)

	resp := call(t, c, addr, adminReq(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "2", resp.Ext("wipeTopicCount"))
	rd, _ := routeOf(t, c, addr, "T1")
	require.Equal(t, map[string]int32{"broker-a": route.PermRead, "broker-b": route.PermRead | route.PermWrite}, permsOf(rd))
	require.Len(t, rd.BrokerDatas, 2, "consumers still find the broker")

	// The same registration again (unchanged version) keeps the wipe.
	require.Equal(t, remoting.Success, call(t, c, addr, registerVersioned("C1", "broker-a", "127.0.0.1:10911", 1, "T1", "T2")).Code)
	rd, _ = routeOf(t, c, addr, "T2")
	require.Equal(t, int32(route.PermRead), rd.QueueDatas[0].Perm)

	resp = call(t, c, addr, adminReq(remoting.AddWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "2", resp.Ext("addTopicCount"))
	rd, _ = routeOf(t, c, addr, "T1")
	require.Equal(t, int32(route.PermRead|route.PermWrite), permsOf(rd)["broker-a"])

	resp = call(t, c, addr, adminReq(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "nobody"}, nil))
	require.Equal(t, "0", resp.Ext("wipeTopicCount"))
	resp = call(t, c, addr, adminReq(remoting.WipeWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil))
	require.Equal(t, "2", resp.Ext("wipeTopicCount"))
	// A changed topic table (new dataVersion) restores the registered perms.
	require.Equal(t, remoting.Success, call(t, c, addr, registerVersioned("C1", "broker-a", "127.0.0.1:10911", 2, "T1", "T2")).Code)
	rd, _ = routeOf(t, c, addr, "T2")
	require.Equal(t, int32(route.PermRead|route.PermWrite), rd.QueueDatas[0].Perm)
}

// TestDeleteTopicAndTopicLists: DELETE_TOPIC_IN_NAMESRV removes the topic (or one cluster's
// part of it) from routes and lists; GET_TOPICS_BY_CLUSTER, GET_SYSTEM_TOPIC_LIST_FROM_NS and
// the unit lists answer RocketMQ's TopicList.
func TestDeleteTopicAndTopicLists(t *testing.T) {
	s, c := start(t)
	addr := s.Addr().String()
	require.Equal(t, remoting.Success, call(t, c, addr, registerVersioned("C1", "broker-a", "127.0.0.1:10911", 1, "T1", "T2")).Code)
	require.Equal(t, remoting.Success, call(t, c, addr, registerVersioned("C2", "broker-b", "127.0.0.1:10931", 1, "T1")).Code)

	list := func(code int32, ext map[string]string) string {
		resp := call(t, c, addr, remoting.NewRequest(code, ext, nil))
		require.Equal(t, remoting.Success, resp.Code, resp.Remark)
		return string(resp.Body)
	}
	require.Equal(t, `{"topicList":["T1","T2"]}`, list(remoting.GetTopicsByCluster, map[string]string{"cluster": "C1"}))
	require.Equal(t, `{"topicList":["T1"]}`, list(remoting.GetTopicsByCluster, map[string]string{"cluster": "C2"}))
	require.Equal(t, `{"topicList":[]}`, list(remoting.GetTopicsByCluster, map[string]string{"cluster": "none"}))
	require.Equal(t, `{"brokerAddr":"127.0.0.1:10911","topicList":["C1","C2","broker-a","broker-b"]}`, list(remoting.GetSystemTopicListFromNS, nil))
	require.Equal(t, `{"topicList":[]}`, list(remoting.GetUnitTopicList, nil))
	require.Equal(t, `{"topicList":[]}`, list(remoting.GetHasUnitSubTopicList, nil))
	require.Equal(t, `{"topicList":[]}`, list(remoting.GetHasUnitSubUnUnitTopicList, nil))

	// Delete T1 in cluster C2 only: broker-b's queue data go.
	resp := call(t, c, addr, adminReq(remoting.DeleteTopicInNameSrv, map[string]string{"topic": "T1", "clusterName": "C2"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	rd, code := routeOf(t, c, addr, "T1")
	require.Equal(t, remoting.Success, code)
	require.Equal(t, map[string]int32{"broker-a": 6}, permsOf(rd))
	require.Len(t, rd.BrokerDatas, 1)
	require.Equal(t, `{"topicList":[]}`, list(remoting.GetTopicsByCluster, map[string]string{"cluster": "C2"}))
	// Delete T2 everywhere: not routed, not listed.
	resp = call(t, c, addr, adminReq(remoting.DeleteTopicInNameSrv, map[string]string{"topic": "T2"}, nil))
	require.Equal(t, remoting.Success, resp.Code)
	_, code = routeOf(t, c, addr, "T2")
	require.Equal(t, remoting.TopicNotExist, code)
	var all struct {
		TopicList []string `json:"topicList"`
	}
	require.NoError(t, json.Unmarshal([]byte(list(remoting.GetAllTopicListFromNameServer, nil)), &all))
	require.NotContains(t, all.TopicList, "T2")
	require.Contains(t, all.TopicList, "T1")
	// Deleting an unknown topic is fine (RocketMQ answers SUCCESS).
	require.Equal(t, remoting.Success, call(t, c, addr, adminReq(remoting.DeleteTopicInNameSrv, map[string]string{"topic": "Nope"}, nil)).Code)
	// The broker's changed registration brings its topics back.
	require.Equal(t, remoting.Success, call(t, c, addr, registerVersioned("C1", "broker-a", "127.0.0.1:10911", 2, "T1", "T2")).Code)
	_, code = routeOf(t, c, addr, "T2")
	require.Equal(t, remoting.Success, code)
}

// TestKVConfig: PUT/GET/DELETE_KV_CONFIG and GET_KVLIST_BY_NAMESPACE with RocketMQ's answers.
func TestKVConfig(t *testing.T) {
	s, c := start(t)
	addr := s.Addr().String()
	kv := func(code int32, kvs ...string) *remoting.Command {
		ext := map[string]string{}
		for i := 0; i+1 < len(kvs); i += 2 {
			ext[kvs[i]] = kvs[i+1]
		}
		return call(t, c, addr, adminReq(code, ext, nil))
	}
	resp := kv(remoting.GetKVConfig, "namespace", "ORDER_TOPIC_CONFIG", "key", "T")
	require.Equal(t, remoting.QueryNotFound, resp.Code)
	require.Equal(t, "No config item, Namespace: ORDER_TOPIC_CONFIG Key: T", resp.Remark)
	resp = kv(remoting.GetKVListByNamespace, "namespace", "ORDER_TOPIC_CONFIG")
	require.Equal(t, remoting.QueryNotFound, resp.Code)
	require.Equal(t, "No config item, Namespace: ORDER_TOPIC_CONFIG", resp.Remark)

	require.Equal(t, remoting.Success, kv(remoting.PutKVConfig, "namespace", "ORDER_TOPIC_CONFIG", "key", "T", "value", "broker-a:4").Code)
	require.Equal(t, remoting.Success, kv(remoting.PutKVConfig, "namespace", "ORDER_TOPIC_CONFIG", "key", "U", "value", "broker-b:2").Code)
	resp = kv(remoting.GetKVConfig, "namespace", "ORDER_TOPIC_CONFIG", "key", "T")
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, "broker-a:4", resp.Ext("value"))
	resp = kv(remoting.GetKVListByNamespace, "namespace", "ORDER_TOPIC_CONFIG")
	require.Equal(t, remoting.Success, resp.Code)
	require.Equal(t, `{"table":{"T":"broker-a:4","U":"broker-b:2"}}`, string(resp.Body))
	table, err := DecodeKVTable(resp.Body)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"T": "broker-a:4", "U": "broker-b:2"}, table)

	require.Equal(t, remoting.Success, kv(remoting.DeleteKVConfig, "namespace", "ORDER_TOPIC_CONFIG", "key", "T").Code)
	require.Equal(t, remoting.QueryNotFound, kv(remoting.GetKVConfig, "namespace", "ORDER_TOPIC_CONFIG", "key", "T").Code)
	resp = kv(remoting.PutKVConfig, "namespace", "", "key", "T", "value", "x")
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Equal(t, "namespace or key is null", resp.Remark)
	resp = kv(remoting.PutKVConfig, "namespace", "ns", "key", "big", "value", strings.Repeat("x", 70000))
	require.Equal(t, remoting.SystemError, resp.Code)
	require.Contains(t, resp.Remark, "kvConfigMaxValueSize")
}

// TestAdminCodesGuarded: with ACL off the admin writes, QUERY_DATA_VERSION and
// GET_NAMESRV_CONFIG need the registration secret's signature, like registrations; lookups do not.
func TestAdminCodesGuarded(t *testing.T) {
	s, c := start(t)
	addr := s.Addr().String()
	for _, code := range []int32{remoting.WipeWritePermOfBroker, remoting.AddWritePermOfBroker, remoting.DeleteTopicInNameSrv,
		remoting.PutKVConfig, remoting.DeleteKVConfig, remoting.QueryDataVersion, remoting.GetNamesrvConfig, remoting.UpdateNamesrvConfig} {
		ext := map[string]string{"brokerName": "broker-a", "topic": "T", "namespace": "ns", "key": "k", "value": "v"}
		resp := call(t, c, addr, remoting.NewRequest(code, ext, nil))
		require.Equal(t, remoting.NoPermission, resp.Code, remoting.RequestName(code))
		require.Contains(t, resp.Remark, "registration secret")
		wrong := remoting.NewRequest(code, ext, nil)
		acl.SignCommand(wrong, acl.BrokerAccessKey, "another-secret-of-16-bytes")
		resp = call(t, c, addr, wrong)
		require.Equal(t, remoting.NoPermission, resp.Code, remoting.RequestName(code))
		require.Contains(t, resp.Remark, "signature does not verify")
	}
	_, ok, err := s.kv.Get("ns", "k")
	require.NoError(t, err)
	require.False(t, ok, "nothing stored by a stranger")
	for _, code := range []int32{remoting.GetKVConfig, remoting.GetKVListByNamespace, remoting.GetTopicsByCluster,
		remoting.GetSystemTopicListFromNS, remoting.GetUnitTopicList} {
		resp := call(t, c, addr, remoting.NewRequest(code, map[string]string{"namespace": "ns", "key": "k", "cluster": "C"}, nil))
		require.NotEqual(t, remoting.NoPermission, resp.Code, remoting.RequestName(code))
	}

	// registrationAllowUnauthenticated opens them, as it opens registration.
	s2, c2 := start(t, func(cfg *Config) { cfg.RegistrationAllowUnauthenticated = true })
	resp := call(t, c2, s2.Addr().String(), remoting.NewRequest(remoting.PutKVConfig, map[string]string{"namespace": "ns", "key": "k", "value": "v"}, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
}

// TestNamesrvConfigAndDataVersion: GET_NAMESRV_CONFIG is the properties text with secrets
// masked; QUERY_DATA_VERSION compares with the broker's last registration.
func TestNamesrvConfigAndDataVersion(t *testing.T) {
	s, c := start(t)
	addr := s.Addr().String()
	resp := call(t, c, addr, adminReq(remoting.GetNamesrvConfig, nil, nil))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	text := string(resp.Body)
	require.Contains(t, text, "listenPort="+strconv.Itoa(s.cfg.ListenPort)+"\n")
	require.Contains(t, text, "registrationSecret=****\n")
	require.NotContains(t, text, testSecret)

	dv := func(counter int64) *remoting.Command {
		body := route.AppendDataVersion(nil, route.DataVersion{Timestamp: 1, Counter: counter})
		return call(t, c, addr, adminReq(remoting.QueryDataVersion, map[string]string{"brokerAddr": "127.0.0.1:10911",
			"brokerName": "broker-a", "brokerId": "0", "clusterName": "C1"}, body))
	}
	resp = dv(3)
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "true", resp.Ext("changed"), "unknown broker")
	require.Empty(t, resp.Body)
	require.Equal(t, remoting.Success, call(t, c, addr, registerVersioned("C1", "broker-a", "127.0.0.1:10911", 3, "T1")).Code)
	resp = dv(3)
	require.Equal(t, "false", resp.Ext("changed"))
	require.Equal(t, `{"counter":3,"stateVersion":0,"timestamp":1}`, string(resp.Body))
	require.Equal(t, "true", dv(4).Ext("changed"))
}

// FuzzDecodeKVTable: no body makes the decoder panic; what it accepts re-encodes the same.
func FuzzDecodeKVTable(f *testing.F) {
	f.Add([]byte(`{"table":{"a":"b"}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeKVTable(data)
		if err != nil {
			return
		}
		again, err := DecodeKVTable(AppendKVTable(nil, m))
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}
