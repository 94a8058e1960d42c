package route

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// minimalSafeBody is the route body the Go client was observed to accept,
// with brokerAddrs keys quoted (the client strips the quotes).
const minimalSafeBody = `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:30911","1":"127.0.0.1:30921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`

// javaRouteBody is the same route as a Java name server writes it for an
// old client: bare integer keys.
const javaRouteBody = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:30911",1:"127.0.0.1:30921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`

func sampleRoute() TopicRouteData {
	return TopicRouteData{
		QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 2, WriteQueueNums: 2, Perm: PermRead | PermWrite}},
		BrokerDatas: []BrokerData{{
			Cluster:     "DefaultCluster",
			BrokerName:  "broker-a",
			BrokerAddrs: map[int64]string{0: "127.0.0.1:30911", 1: "127.0.0.1:30921"},
		}},
		FilterServerTable: map[string][]string{},
	}
}

func TestRouteEncodesMinimalSafeBody(t *testing.T) {
	r := sampleRoute()
	require.Equal(t, minimalSafeBody, string(AppendTopicRouteData(nil, r)))
	viaJSON, err := json.Marshal(r)
	require.NoError(t, err)
	require.Equal(t, minimalSafeBody, string(viaJSON))
}

func TestRouteDecodesBothKeyStyles(t *testing.T) {
	for _, body := range []string{minimalSafeBody, javaRouteBody} {
		got, err := DecodeTopicRouteData([]byte(body))
		require.NoError(t, err)
		require.Equal(t, sampleRoute(), got)
		require.Equal(t, "127.0.0.1:30911", got.BrokerDatas[0].MasterAddr())
	}
}

// clientBrokerAddrs parses brokerAddrs the way §3.1 describes the Go client
// doing it: take the raw object text, strip the braces, split on ',', split
// each piece at the first ':', drop every '"', parse the key as int64.
func clientBrokerAddrs(t *testing.T, raw string) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	inner := raw[1 : len(raw)-1]
	if inner == "" {
		return out
	}
	for _, piece := range strings.Split(inner, ",") {
		k, v, ok := strings.Cut(piece, ":")
		require.True(t, ok, piece)
		id, err := strconv.ParseInt(strings.ReplaceAll(k, `"`, ""), 10, 64)
		require.NoError(t, err, piece)
		out[id] = strings.ReplaceAll(v, `"`, "")
	}
	return out
}

func TestRouteShapeForGoClient(t *testing.T) {
	r := TopicRouteData{BrokerDatas: []BrokerData{
		{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{10: "h:10", 2: "h:2", 0: "h:0"}},
		{Cluster: "c", BrokerName: "empty"},
	}}
	body := string(AppendTopicRouteData(nil, r))
	require.NotContains(t, body, " ")
	require.Contains(t, body, `"queueDatas":[]`, "queueDatas is always an array")
	require.Contains(t, body, `"brokerAddrs":{"0":"h:0","2":"h:2","10":"h:10"}`, "ids in numeric order")
	require.Contains(t, body, `"brokerAddrs":{}`, "brokerAddrs always present")
	require.NotContains(t, body, "orderTopicConf")
	require.True(t, json.Valid([]byte(body)))

	var raw struct {
		BrokerDatas []struct {
			BrokerAddrs json.RawMessage `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &raw))
	require.Equal(t, r.BrokerDatas[0].BrokerAddrs, clientBrokerAddrs(t, string(raw.BrokerDatas[0].BrokerAddrs)))
	require.Empty(t, clientBrokerAddrs(t, string(raw.BrokerDatas[1].BrokerAddrs)))

	r.OrderTopicConf = "b:4"
	r.FilterServerTable = map[string][]string{"h:0": {"f1", "f2"}}
	body = string(AppendTopicRouteData(nil, r))
	require.Contains(t, body, `"filterServerTable":{"h:0":["f1","f2"]},"orderTopicConf":"b:4","queueDatas":[]`)
	got, err := DecodeTopicRouteData([]byte(body))
	require.NoError(t, err)
	require.Equal(t, "b:4", got.OrderTopicConf)
	require.Equal(t, []string{"f1", "f2"}, got.FilterServerTable["h:0"])
}

func TestRouteRejectsBadBrokerID(t *testing.T) {
	_, err := DecodeTopicRouteData([]byte(`{"brokerDatas":[{"brokerAddrs":{"x":"a"}}],"queueDatas":[]}`))
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorContains(t, err, ErrBrokerAddrKey.Error())
	_, err = DecodeTopicRouteData([]byte(`{"queueDatas":[`))
	require.ErrorIs(t, err, ErrSyntax)
}

func TestStringEscaping(t *testing.T) {
	b := BrokerData{BrokerName: "a\"b\\c\n<&>\x01é\xff", BrokerAddrs: map[int64]string{}}
	enc := AppendBrokerData(nil, b)
	require.True(t, json.Valid(enc), string(enc))
	require.Contains(t, string(enc), `<&>`)
	var back BrokerData
	require.NoError(t, json.Unmarshal(enc, &back))
	require.Equal(t, "a\"b\\c\n<&>\x01é\uFFFD", back.BrokerName)
}

const javaClusterInfo = `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}`

func TestClusterInfoRoundTrip(t *testing.T) {
	ci, err := DecodeClusterInfo([]byte(javaClusterInfo))
	require.NoError(t, err)
	require.Equal(t, map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, ci.BrokerAddrTable["broker-a"].BrokerAddrs)
	require.Equal(t, []string{"broker-a"}, ci.ClusterAddrTable["DefaultCluster"])
	enc := AppendClusterInfo(nil, ci)
	want, err := Lenient([]byte(javaClusterInfo))
	require.NoError(t, err)
	require.Equal(t, string(want), string(enc))
	back, err := DecodeClusterInfo(enc)
	require.NoError(t, err)
	require.Equal(t, ci, back)
}

// A 4.x REGISTER_BROKER body: DataVersion without stateVersion, TopicConfig
// without attributes.
const javaRegisterBody = `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":7,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},"TBW102":{"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8}}}}`

func TestRegisterBrokerBodyRoundTrip(t *testing.T) {
	b, err := DecodeRegisterBrokerBody([]byte(javaRegisterBody))
	require.NoError(t, err)
	w := b.TopicConfigSerializeWrapper
	require.Equal(t, DataVersion{Timestamp: 1700000000000, Counter: 7}, w.DataVersion)
	require.Len(t, w.TopicConfigTable, 2)
	require.Equal(t, TopicConfig{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: "SINGLE_TAG"}, w.TopicConfigTable["TBW102"])
	require.Equal(t, []string{}, b.FilterServerList)

	enc := AppendRegisterBrokerBody(nil, b)
	require.Equal(t, `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TBW102":{"attributes":{},"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8},"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}}`, string(enc))
	back, err := DecodeRegisterBrokerBody(enc)
	require.NoError(t, err)
	for k, v := range b.TopicConfigSerializeWrapper.TopicConfigTable {
		require.True(t, v.Equal(back.TopicConfigSerializeWrapper.TopicConfigTable[k]), k)
	}
	require.True(t, strings.HasPrefix(string(AppendRegisterBrokerBody(nil, RegisterBrokerBody{})), `{"filterServerList":[],`))
}

func TestTopicConfigDefaultsOnDecode(t *testing.T) {
	w, err := DecodeTopicConfigSerializeWrapper([]byte(`{"topicConfigTable":{"T":{"perm":4}}}`))
	require.NoError(t, err)
	require.Equal(t, TopicConfig{TopicName: "T", ReadQueueNums: 16, WriteQueueNums: 16, Perm: 4, TopicFilterType: "SINGLE_TAG"}, w.TopicConfigTable["T"])
	require.Equal(t, DataVersion{}, w.DataVersion)
}

func TestBodyCRC32(t *testing.T) {
	// CRC-32/IEEE("123456789") = 0xCBF43926; masked to 31 bits.
	require.Equal(t, int32(0x4BF43926), BodyCRC32([]byte("123456789")))
	require.NoError(t, CheckBodyCRC32([]byte("123456789"), 0x4BF43926))
	require.NoError(t, CheckBodyCRC32([]byte("anything"), 0))
	require.ErrorIs(t, CheckBodyCRC32([]byte("12345678"), 0x4BF43926), ErrBodyCRC)
}

func TestDataVersion(t *testing.T) {
	var v DataVersion
	require.NoError(t, json.Unmarshal([]byte(`{"counter":3,"timestamp":5}`), &v))
	require.Equal(t, DataVersion{Timestamp: 5, Counter: 3}, v)
	require.Equal(t, `{"counter":3,"stateVersion":0,"timestamp":5}`, string(AppendDataVersion(nil, v)))
	require.True(t, v.Equal(DataVersion{Timestamp: 5, Counter: 3}))
	require.False(t, v.Equal(DataVersion{Timestamp: 5, Counter: 3, StateVersion: 1}))
}

func TestPerm(t *testing.T) {
	require.True(t, IsReadable(6) && IsWriteable(6) && !IsInherited(6))
	require.True(t, IsInherited(7))
	require.False(t, IsWriteable(PermRead))
}

func FuzzDecodeTopicRouteData(f *testing.F) {
	f.Add([]byte(minimalSafeBody))
	f.Add([]byte(javaRouteBody))
	f.Add([]byte(javaClusterInfo))
	f.Add([]byte(javaRegisterBody))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := DecodeTopicRouteData(in)
		if err == nil {
			enc := AppendTopicRouteData(nil, r)
			if !json.Valid(enc) {
				t.Fatalf("re-encoding is not JSON: %s", enc)
			}
			if _, err := DecodeTopicRouteData(enc); err != nil {
				t.Fatalf("re-encoded body does not decode: %v", err)
			}
		}
		_, _ = DecodeClusterInfo(in)
		if b, err := DecodeRegisterBrokerBody(in); err == nil {
			_ = AppendRegisterBrokerBody(nil, b)
		}
	})
}
