package route

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// benchRoute is a route with three broker groups of one master and two
// slaves each.
func benchRoute() TopicRouteData {
	r := TopicRouteData{FilterServerTable: map[string][]string{}}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("broker-%c", 'a'+i)
		r.QueueDatas = append(r.QueueDatas, QueueData{BrokerName: name, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6})
		r.BrokerDatas = append(r.BrokerDatas, BrokerData{Cluster: "DefaultCluster", BrokerName: name, BrokerAddrs: map[int64]string{
			0: fmt.Sprintf("10.0.%d.1:10911", i), 1: fmt.Sprintf("10.0.%d.2:10911", i), 2: fmt.Sprintf("10.0.%d.3:10911", i),
		}})
	}
	return r
}

// plainRoute mirrors TopicRouteData with string map keys, the shape
// encoding/json can marshal directly: the same-run baseline.
type plainRoute struct {
	BrokerDatas []struct {
		BrokerAddrs        map[string]string `json:"brokerAddrs"`
		BrokerName         string            `json:"brokerName"`
		Cluster            string            `json:"cluster"`
		EnableActingMaster bool              `json:"enableActingMaster"`
	} `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
	QueueDatas        []QueueData         `json:"queueDatas"`
}

func timeLoop(n int, f func()) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		f()
	}
	return time.Since(start)
}

// BenchmarkAppendTopicRouteData reports the encoder's cost relative to
// encoding/json marshalling the same route in a plain struct.
func BenchmarkAppendTopicRouteData(b *testing.B) {
	r := benchRoute()
	var plain plainRoute
	if err := json.Unmarshal(AppendTopicRouteData(nil, r), &plain); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	b.ResetTimer()
	ours := timeLoop(b.N, func() { buf = AppendTopicRouteData(buf[:0], r) })
	b.StopTimer()
	base := timeLoop(b.N, func() { _, _ = json.Marshal(plain) })
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "encoding/json-ns/op")
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-encoding/json")
}

// BenchmarkDecodeTopicRouteData reports decoding a Java (bare-key) route
// body relative to encoding/json decoding the standard-JSON form.
func BenchmarkDecodeTopicRouteData(b *testing.B) {
	body := []byte(`{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`)
	std, err := Lenient(body)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	ours := timeLoop(b.N, func() { _, _ = DecodeTopicRouteData(body) })
	b.StopTimer()
	base := timeLoop(b.N, func() { var p plainRoute; _ = json.Unmarshal(std, &p) })
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-encoding/json")
}

// BenchmarkLenient reports the key-quoting pass over a fastjson offset
// table relative to json.Valid over the same bytes.
func BenchmarkLenient(b *testing.B) {
	var body []byte
	body = append(body, `{"offsetTable":{`...)
	for g := 0; g < 50; g++ {
		if g > 0 {
			body = append(body, ',')
		}
		body = append(body, fmt.Sprintf(`"Topic%d@group%d":{0:1234567,1:1234568,2:1234569,3:1234570}`, g, g)...)
	}
	body = append(body, `}}`...)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	ours := timeLoop(b.N, func() { _, _ = Lenient(body) })
	b.StopTimer()
	fixed, _ := Lenient(body)
	base := timeLoop(b.N, func() { _ = json.Valid(fixed) })
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-json.Valid")
}
