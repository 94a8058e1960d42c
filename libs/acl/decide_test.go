package acl

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// decideTable: the RocketMQ sample plus a publisher, a subscriber and an admin with lists.
const decideYML = `
globalWhiteRemoteAddresses: [10.10.103.*]
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
    groupPerms: [groupA=DENY, groupB=PUB|SUB, groupC=SUB]
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
  - accessKey: pubonly
    secretKey: pubsecret
    defaultTopicPerm: PUB
  - accessKey: subonly
    secretKey: subsecret
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
  - accessKey: listadmin
    secretKey: adminsecret
    admin: true
    topicPerms: [onlyThis=PUB]
`

var (
	remote = netip.MustParseAddr("127.0.0.1")
	keys   = map[string]string{"RocketMQ": "12345678", "rocketmq2": "12345678", "pubonly": "pubsecret", "subonly": "subsecret", "listadmin": "adminsecret"}
)

func decideTable(t testing.TB) *Table {
	tbl, err := Parse([]byte(decideYML))
	require.NoError(t, err)
	return tbl
}

func signed(ak string, code int32, ext map[string]string, body []byte) *remoting.Command {
	e := map[string]string{}
	for k, v := range ext {
		e[k] = v
	}
	req := remoting.NewRequest(code, e, body)
	SignCommand(req, ak, keys[ak])
	return req
}

func heartbeat(group string, topics ...string) []byte {
	var subs []string
	for _, tp := range topics {
		subs = append(subs, `{"topic":"`+tp+`","subString":"*"}`)
	}
	return []byte(`{"clientID":"c1","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"` + group +
		`","subscriptionDataSet":[` + strings.Join(subs, ",") + `]}]}`)
}

// Each request code's resources, as PlainAccessValidator.parse maps them, against the defaults,
// the listed permissions and DENY.
func TestDecideCodes(t *testing.T) {
	tbl := decideTable(t)
	type c struct {
		name   string
		ak     string
		code   int32
		ext    map[string]string
		body   []byte
		reason Reason
		what   string // resource in the refusal
	}
	for _, tc := range []c{
		// Sends: topic PUB; the V2 and batch names; DENY beats everything; defaults.
		{"send listed PUB|SUB", "RocketMQ", remoting.SendMessage, map[string]string{"topic": "topicB"}, nil, ReasonSigned, ""},
		{"send DENY", "RocketMQ", remoting.SendMessage, map[string]string{"topic": "topicA"}, nil, ReasonNoPermission, "topic:topicA"},
		{"send SUB-only topic", "RocketMQ", remoting.SendMessage, map[string]string{"topic": "topicC"}, nil, ReasonNoPermission, "topic:topicC"},
		{"send default DENY", "RocketMQ", remoting.SendMessage, map[string]string{"topic": "other"}, nil, ReasonNoPermission, "topic:other"},
		{"send default PUB", "pubonly", remoting.SendMessage, map[string]string{"topic": "any"}, nil, ReasonSigned, ""},
		{"send by SUB account", "subonly", remoting.SendMessage, map[string]string{"topic": "any"}, nil, ReasonNoPermission, "topic:any"},
		{"send v2", "subonly", remoting.SendMessageV2, map[string]string{"b": "any", "a": "pg"}, nil, ReasonNoPermission, "topic:any"},
		{"send batch", "subonly", remoting.SendBatchMessage, map[string]string{"b": "any"}, nil, ReasonNoPermission, "topic:any"},
		{"send batch ok", "pubonly", remoting.SendBatchMessage, map[string]string{"b": "any"}, nil, ReasonSigned, ""},
		{"reply send", "subonly", remoting.SendReplyMessageV2, map[string]string{"b": "any"}, nil, ReasonNoPermission, "topic:any"},
		// A send into a retry topic is the group's SUB.
		{"send back by topic", "subonly", remoting.SendMessage, map[string]string{"topic": "%RETRY%cg"}, nil, ReasonSigned, ""},
		{"send retry of DENY group", "RocketMQ", remoting.SendMessage, map[string]string{"topic": "%RETRY%groupA"}, nil, ReasonNoPermission, "group:groupA"},
		{"send retry, PUB-only account", "pubonly", remoting.SendMessageV2, map[string]string{"b": "%RETRY%cg"}, nil, ReasonNoPermission, "group:cg"},
		// The trace topic needs no permission, only the signature.
		{"trace topic", "RocketMQ", remoting.SendMessage, map[string]string{"topic": "RMQ_SYS_TRACE_TOPIC"}, nil, ReasonSigned, ""},
		{"send back", "subonly", remoting.ConsumerSendMsgBack, map[string]string{"group": "cg"}, nil, ReasonSigned, ""},
		{"send back DENY group", "RocketMQ", remoting.ConsumerSendMsgBack, map[string]string{"group": "groupA"}, nil, ReasonNoPermission, "group:groupA"},
		{"send back no group perm", "pubonly", remoting.ConsumerSendMsgBack, map[string]string{"group": "cg"}, nil, ReasonNoPermission, "group:cg"},
		// Pulls: topic SUB and group SUB.
		{"pull", "subonly", remoting.PullMessage, map[string]string{"topic": "t", "consumerGroup": "cg"}, nil, ReasonSigned, ""},
		{"pull by PUB account", "pubonly", remoting.PullMessage, map[string]string{"topic": "t", "consumerGroup": "cg"}, nil, ReasonNoPermission, "topic:t"},
		{"pull listed", "RocketMQ", remoting.PullMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupC"}, nil, ReasonSigned, ""},
		{"pull DENY group", "RocketMQ", remoting.PullMessage, map[string]string{"topic": "topicB", "consumerGroup": "groupA"}, nil, ReasonNoPermission, "group:groupA"},
		{"pull retry topic", "RocketMQ", remoting.PullMessage, map[string]string{"topic": "%RETRY%groupB", "consumerGroup": "groupB"}, nil, ReasonSigned, ""},
		{"pull retry of DENY group", "RocketMQ", remoting.PullMessage, map[string]string{"topic": "%RETRY%groupA", "consumerGroup": "groupB"}, nil, ReasonNoPermission, "group:groupA"},
		{"query message", "pubonly", remoting.QueryMessage, map[string]string{"topic": "t"}, nil, ReasonNoPermission, "topic:t"},
		{"view by id: signature only", "pubonly", remoting.ViewMessageByID, map[string]string{"offset": "0"}, nil, ReasonSigned, ""},
		// Heartbeats: each consumer group and its subscriptions; producers need nothing.
		{"heartbeat", "subonly", remoting.HeartBeat, nil, heartbeat("cg", "t", "%RETRY%cg"), ReasonSigned, ""},
		{"heartbeat of producer only", "pubonly", remoting.HeartBeat, nil, []byte(`{"clientID":"c","producerDataSet":[{"groupName":"pg"}]}`), ReasonSigned, ""},
		{"heartbeat DENY topic", "RocketMQ", remoting.HeartBeat, nil, heartbeat("groupB", "topicB", "topicA"), ReasonNoPermission, "topic:topicA"},
		{"heartbeat DENY group", "RocketMQ", remoting.HeartBeat, nil, heartbeat("groupA", "topicB"), ReasonNoPermission, "group:groupA"},
		{"heartbeat by PUB account", "pubonly", remoting.HeartBeat, nil, heartbeat("cg", "t"), ReasonNoPermission, "group:cg"},
		{"heartbeat bad body", "subonly", remoting.HeartBeat, nil, []byte("{"), ReasonBadRequest, ""},
		// Group codes.
		{"unregister consumer", "pubonly", remoting.UnregisterClient, map[string]string{"clientID": "c", "consumerGroup": "cg"}, nil, ReasonNoPermission, "group:cg"},
		{"unregister producer", "pubonly", remoting.UnregisterClient, map[string]string{"clientID": "c", "producerGroup": "pg"}, nil, ReasonSigned, ""},
		{"consumer list", "pubonly", remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "cg"}, nil, ReasonNoPermission, "group:cg"},
		{"consumer list ok", "subonly", remoting.GetConsumerListByGroup, map[string]string{"consumerGroup": "cg"}, nil, ReasonSigned, ""},
		{"commit offset", "subonly", remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "cg", "topic": "t"}, nil, ReasonSigned, ""},
		{"commit offset DENY topic", "RocketMQ", remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "groupB", "topic": "topicA"}, nil, ReasonNoPermission, "topic:topicA"},
		{"commit offset by PUB account", "pubonly", remoting.UpdateConsumerOffset, map[string]string{"consumerGroup": "cg", "topic": "t"}, nil, ReasonNoPermission, "group:cg"},
		{"query offset", "pubonly", remoting.QueryConsumerOffset, map[string]string{"consumerGroup": "cg", "topic": "t"}, nil, ReasonNoPermission, "group:cg"},
		{"lock", "pubonly", remoting.LockBatchMQ, nil, []byte(`{"consumerGroup":"cg","clientId":"c","mqSet":[]}`), ReasonNoPermission, "group:cg"},
		{"lock bad body", "subonly", remoting.UnlockBatchMQ, nil, []byte(`[`), ReasonBadRequest, ""},
		// Missing fields are checked as the empty name (only a default can grant it).
		{"send without topic", "RocketMQ", remoting.SendMessage, nil, nil, ReasonNoPermission, "topic:"},
		// Read-only lookups: any account with a valid signature.
		{"route", "pubonly", remoting.GetRouteInfoByTopic, map[string]string{"topic": "t"}, nil, ReasonSigned, ""},
		{"cluster info", "RocketMQ", remoting.GetBrokerClusterInfo, nil, nil, ReasonSigned, ""},
		{"runtime info", "subonly", remoting.GetBrokerRuntimeInfo, nil, nil, ReasonSigned, ""},
		{"max offset", "pubonly", remoting.GetMaxOffset, map[string]string{"topic": "t", "queueId": "0"}, nil, ReasonSigned, ""},
		// Admin codes.
		{"create topic by non-admin", "RocketMQ", remoting.UpdateAndCreateTopic, map[string]string{"topic": "t"}, nil, ReasonAdminRequired, ""},
		{"create topic by admin", "rocketmq2", remoting.UpdateAndCreateTopic, map[string]string{"topic": "t"}, nil, ReasonSigned, ""},
		{"register broker by non-admin", "subonly", remoting.RegisterBroker, map[string]string{"brokerName": "b"}, nil, ReasonAdminRequired, ""},
		{"register broker by admin", "rocketmq2", remoting.RegisterBroker, map[string]string{"brokerName": "b"}, nil, ReasonSigned, ""},
		{"unregister broker", "pubonly", remoting.UnregisterBroker, nil, nil, ReasonAdminRequired, ""},
		{"metadata dump", "subonly", remoting.GetAllTopicConfig, nil, nil, ReasonAdminRequired, ""},
		{"offsets dump", "RocketMQ", remoting.GetAllConsumerOffset, nil, nil, ReasonAdminRequired, ""},
		{"offsets dump by admin", "rocketmq2", remoting.GetAllConsumerOffset, nil, nil, ReasonSigned, ""},
		{"admin without lists uses everything", "rocketmq2", remoting.PullMessage, map[string]string{"topic": "t", "consumerGroup": "g"}, nil, ReasonSigned, ""},
		// An admin account that lists permissions is checked against them and its defaults.
		{"admin with lists: listed", "listadmin", remoting.SendMessage, map[string]string{"topic": "onlyThis"}, nil, ReasonSigned, ""},
		{"admin with lists: default DENY", "listadmin", remoting.SendMessage, map[string]string{"topic": "other"}, nil, ReasonNoPermission, "topic:other"},
		{"admin with lists: admin code", "listadmin", remoting.DeleteTopicInBroker, map[string]string{"topic": "x"}, nil, ReasonSigned, ""},
	} {
		d := tbl.Decide(remote, signed(tc.ak, tc.code, tc.ext, tc.body))
		require.Equal(t, tc.reason, d.Reason, "%s: %s", tc.name, d.Remark())
		require.Equal(t, tc.reason.Allowed(), d.Allowed(), tc.name)
		if tc.what != "" {
			require.Contains(t, d.Remark(), tc.what, tc.name)
			require.Equal(t, tc.ak, d.AccessKey)
		}
	}
}

// Identity checks: missing, unknown and badly signed requests, in RocketMQ's words.
func TestDecideIdentity(t *testing.T) {
	tbl := decideTable(t)
	send := map[string]string{"topic": "topicB"}

	d := tbl.Decide(remote, remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "topicB"}, nil))
	require.Equal(t, ReasonNoAccessKey, d.Reason)
	require.Equal(t, "No accessKey is configured", d.Remark())

	req := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "topicB"}, []byte("x"))
	SignCommand(req, "stranger", "12345678")
	d = tbl.Decide(remote, req)
	require.Equal(t, ReasonUnknownAccessKey, d.Reason)
	require.Equal(t, "No acl config for stranger", d.Remark())

	// Wrong secret, tampered field, tampered body, no signature, garbage signature.
	wrong := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "topicB"}, []byte("x"))
	SignCommand(wrong, "RocketMQ", "87654321")
	tampered := signed("RocketMQ", remoting.SendMessage, send, []byte("x"))
	tampered.ExtFields["topic"] = "topicC"
	body := signed("RocketMQ", remoting.SendMessage, send, []byte("x"))
	body.Body = []byte("y")
	unsigned := signed("RocketMQ", remoting.SendMessage, send, nil)
	delete(unsigned.ExtFields, ExtSignature)
	garbage := signed("RocketMQ", remoting.SendMessage, send, nil)
	garbage.ExtFields[ExtSignature] = strings.Repeat("A", signatureLen)
	for name, r := range map[string]*remoting.Command{"wrong secret": wrong, "tampered field": tampered, "tampered body": body, "unsigned": unsigned, "garbage": garbage} {
		d := tbl.Decide(remote, r)
		require.Equal(t, ReasonBadSignature, d.Reason, name)
		require.Equal(t, "Check signature failed for accessKey=RocketMQ", d.Remark(), name)
	}

	d = tbl.Decide(remote, signed("RocketMQ", remoting.SendMessage, map[string]string{"topic": "topicA"}, nil))
	require.Equal(t, "No permission for topic:topicA (SEND_MESSAGE needs PUB, accessKey=RocketMQ holds DENY)", d.Remark())
	d = tbl.Decide(remote, signed("RocketMQ", remoting.SendMessage, map[string]string{"topic": "zzz"}, nil))
	require.Equal(t, "No default permission for topic:zzz (SEND_MESSAGE needs PUB, accessKey=RocketMQ holds DENY)", d.Remark())
	d = tbl.Decide(remote, signed("RocketMQ", remoting.UpdateAndCreateTopic, nil, nil))
	require.Equal(t, "Need admin permission for request code=17 (UPDATE_AND_CREATE_TOPIC), but accessKey=RocketMQ is not", d.Remark())
}

// White addresses: a global one skips every check; an account's skips the signature and the
// permissions for requests naming that account; neither helps other addresses.
func TestDecideWhiteAddresses(t *testing.T) {
	tbl := decideTable(t)
	white := netip.MustParseAddr("10.10.103.7")
	plain := remoting.NewRequest(remoting.UpdateAndCreateTopic, map[string]string{"topic": "t"}, nil)
	require.Equal(t, ReasonGlobalWhite, tbl.Decide(white, plain).Reason)
	require.Equal(t, ReasonGlobalWhite, tbl.Decide(netip.MustParseAddr("::ffff:10.10.103.7"), plain).Reason)
	require.Equal(t, ReasonNoAccessKey, tbl.Decide(netip.MustParseAddr("10.10.104.7"), plain).Reason)

	acctWhite := netip.MustParseAddr("192.168.1.20")
	named := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "t", ExtAccessKey: "rocketmq2"}, nil)
	require.Equal(t, ReasonWhiteAddress, tbl.Decide(acctWhite, named).Reason)
	require.Equal(t, ReasonBadSignature, tbl.Decide(netip.MustParseAddr("192.168.2.20"), named).Reason)
	other := remoting.NewRequest(remoting.SendMessage, map[string]string{"topic": "t", ExtAccessKey: "RocketMQ"}, nil)
	require.Equal(t, ReasonBadSignature, tbl.Decide(acctWhite, other).Reason, "another account's white address does not apply")
	require.Equal(t, ReasonNoAccessKey, tbl.Decide(netip.Addr{}, plain).Reason, "an unknown remote address matches nothing")
}

func TestPermGrants(t *testing.T) {
	for _, c := range []struct {
		held, needed Perm
		ok           bool
	}{
		{PermPub, PermPub, true}, {PermSub, PermPub, false}, {PermPub | PermSub, PermSub, true},
		{PermDeny, PermSub, false}, {PermDeny | PermPub, PermPub, false}, {PermPub, PermAny, true},
		{PermSub, PermAny, true}, {PermDeny, PermAny, false}, {0, PermAny, false}, {0, PermPub, false},
	} {
		require.Equal(t, c.ok, c.held.Grants(c.needed), "%s grants %s", c.held, c.needed)
	}
	for s, want := range map[string]Perm{"DENY": PermDeny, " PUB ": PermPub, "SUB": PermSub, "PUB|SUB": PermPub | PermSub, "SUB|PUB": PermPub | PermSub} {
		p, ok := ParsePerm(s)
		require.True(t, ok, s)
		require.Equal(t, want, p, s)
		require.Equal(t, strings.TrimSpace(strings.Replace(s, "SUB|PUB", "PUB|SUB", 1)), p.String())
	}
	for _, s := range []string{"ANY", "pub", "RW", "", "PUB | SUB"} {
		_, ok := ParsePerm(s)
		require.False(t, ok, s)
	}
}

// A signed send is decided without allocating.
func TestDecideSendAllocations(t *testing.T) {
	tbl := decideTable(t)
	ext := map[string]string{"producerGroup": "pg", "topic": "t", "queueId": "1", "sysFlag": "0", "bornTimestamp": "1795936508414",
		"flag": "0", "properties": "TAGS\x01a\x02UNIQ_KEY\x01C000020244FC0000000091c070600001\x02", "reconsumeTimes": "0", "unitMode": "false",
		"maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false", "bname": "broker-a"}
	req := signed("pubonly", remoting.SendMessage, ext, make([]byte, 1024))
	tbl.Decide(remote, req) // warm the pool
	allocs := testing.AllocsPerRun(200, func() {
		if d := tbl.Decide(remote, req); !d.Allowed() {
			t.Fatal(d.Remark())
		}
	})
	require.Zero(t, allocs, "allocations per signed SEND_MESSAGE decision")
}

func BenchmarkDecideSend(b *testing.B) {
	tbl := decideTable(b)
	ext := map[string]string{"producerGroup": "pg", "topic": "t", "queueId": "1", "sysFlag": "0", "bornTimestamp": "1795936508414",
		"flag": "0", "properties": "TAGS\x01a\x02", "reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false", "bname": "broker-a"}
	req := signed("pubonly", remoting.SendMessage, ext, make([]byte, 1024))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !tbl.Decide(remote, req).Allowed() {
				b.Fatal("refused")
			}
		}
	})
}

func FuzzDecide(f *testing.F) {
	f.Add(int32(10), "RocketMQ", "topic", "topicB", []byte("x"), true, byte(0))
	f.Add(int32(34), "subonly", "consumerGroup", "cg", heartbeat("cg", "t"), true, byte(1))
	f.Add(int32(11), "pubonly", "topic", "%RETRY%x", []byte{}, false, byte(2))
	f.Add(int32(41), "subonly", "x", "y", []byte(`{"consumerGroup":"g"}`), true, byte(3))
	tbl := decideTable(f)
	addrs := []netip.Addr{remote, netip.MustParseAddr("10.10.103.1"), netip.MustParseAddr("192.168.1.1"), netip.MustParseAddr("::1")}
	f.Fuzz(func(t *testing.T, code int32, ak, k, v string, body []byte, sign bool, ai byte) {
		req := remoting.NewRequest(code, map[string]string{k: v, "topic": v, "b": v, "group": v, "consumerGroup": v}, body)
		if sign {
			SignCommand(req, ak, keys[ak])
		} else {
			req.ExtFields[ExtAccessKey] = ak
		}
		a := addrs[int(ai)%len(addrs)]
		d := tbl.Decide(a, req) // never panics
		_ = d.Remark()
		if d.Allowed() && d.Reason != ReasonGlobalWhite && d.Reason != ReasonWhiteAddress {
			acct := tbl.Account(ak)
			if acct == nil || !acct.Verify(req) {
				t.Fatalf("allowed without a valid signature: %+v", d)
			}
			if NeedsAdmin(code) && !acct.Admin {
				t.Fatalf("admin code %d allowed for %s", code, ak)
			}
		}
		if !sign && d.Allowed() && d.Reason == ReasonSigned {
			t.Fatalf("unsigned request counted as signed")
		}
	})
}

func BenchmarkDecideSendSerial(b *testing.B) {
	tbl := decideTable(b)
	ext := map[string]string{"producerGroup": "pg", "topic": "t", "queueId": "1", "sysFlag": "0", "bornTimestamp": "1795936508414",
		"flag": "0", "properties": "TAGS\x01a\x02", "reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false", "bname": "broker-a"}
	req := signed("pubonly", remoting.SendMessage, ext, make([]byte, 1024))
	b.ReportAllocs()
	for b.Loop() {
		if !tbl.Decide(remote, req).Allowed() {
			b.Fatal("refused")
		}
	}
}
