package metasync

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/meta"
)

func benchTopics(b *testing.B, n int) []byte {
	tb := newTables(b, "")
	for i := 0; i < n; i++ {
		if _, err := tb.Topics.Put(meta.TopicConfig{TopicName: fmt.Sprintf("Topic%d", i), ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}); err != nil {
			b.Fatal(err)
		}
	}
	return tb.Topics.Snapshot()
}

// BenchmarkSnapshotRoundTrip measures what one table version costs between
// the master's body and the follower's decoded envelope (normalize, digest,
// encode, decode with validation), for a 1000-topic table, against the
// same-run baseline of one plain json.Unmarshal of the body.
func BenchmarkSnapshotRoundTrip(b *testing.B) {
	body := benchTopics(b, 1000)
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		s, err := NewSnapshot("c", "b", TableTopics, body, "m:1", 0, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		enc, err := AppendSnapshot(nil, s)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeSnapshot(enc); err != nil {
			b.Fatal(err)
		}
	}
	ours := time.Since(start)
	b.StopTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		var v map[string]json.RawMessage
		if err := json.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	}
	base := time.Since(start)
	b.ReportMetric(float64(len(body)), "body-bytes")
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "json-unmarshal-ns/op")
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-json-unmarshal")
}

// BenchmarkFollowerFetchApply measures one announced change end to end on the
// slave side: HTTP fetch of the envelope from a local server, decode, replace
// the 1000-topic table in memory; against the same-run baseline of the HTTP
// GET of the same bytes alone (loopback transfer floor).
func BenchmarkFollowerFetchApply(b *testing.B) {
	bodies := [2][]byte{}
	for k := range bodies {
		raw := benchTopics(b, 1000+k)
		s, err := NewSnapshot(testCluster, testBroker, TableTopics, raw, "", 0, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		if bodies[k], err = AppendSnapshot(nil, s); err != nil {
			b.Fatal(err)
		}
	}
	var cur atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(bodies[cur.Load()%2]) }))
	defer srv.Close()
	slave := newTables(b, "")
	f, err := NewFollower(FollowerConfig{Cluster: testCluster, BrokerName: testBroker, Tables: slave, Snapshots: NewHTTPSnapshots(srv.URL),
		SubjectPrefix: DefaultSubjectPrefix, FallbackInterval: time.Hour, CheckInterval: time.Hour, FetchTimeout: 5 * time.Second,
		FS: DefaultFollowerConfig().FS, Now: time.Now, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		cur.Store(int64(i))
		if _, err := f.syncTable(TableTopics, true, ""); err != nil {
			b.Fatal(err)
		}
	}
	ours := time.Since(start)
	b.StopTimer()
	client := &http.Client{}
	start = time.Now()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+SnapshotPath(testCluster, testBroker, TableTopics), nil)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
	}
	base := time.Since(start)
	b.ReportMetric(float64(base.Nanoseconds())/float64(b.N), "http-get-ns/op")
	b.ReportMetric(float64(ours)/float64(base), "ratio-to-http-get")
}
