package metasync

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func TestSubjectRoundTrip(t *testing.T) {
	for _, names := range [][2]string{{"DefaultCluster", "broker-a"}, {"c.1", "b*>% x"}, {"%RETRY%", "a|b"}} {
		for _, tbl := range AllTables {
			subj := Subject(DefaultSubjectPrefix, names[0], names[1], tbl)
			require.True(t, SubjectMatches(GroupSubject(DefaultSubjectPrefix, names[0], names[1]), subj), subj)
			c, b, got, err := ParseSubject(DefaultSubjectPrefix, subj)
			require.NoError(t, err)
			require.Equal(t, names[0], c)
			require.Equal(t, names[1], b)
			require.Equal(t, tbl, got)
		}
	}
	require.Equal(t, "rmqha.meta.DefaultCluster.broker-a.topics", Subject(DefaultSubjectPrefix, "DefaultCluster", "broker-a", TableTopics))
	require.False(t, SubjectMatches(GroupSubject(DefaultSubjectPrefix, "c", "b"), StatusSubject(DefaultSubjectPrefix, "c", "b", 1)))
	require.True(t, SubjectMatches(StatusWildcard(DefaultSubjectPrefix), StatusSubject(DefaultSubjectPrefix, "c", "b", 1)))
	c, b, err := ParseChangedSubject(DefaultSubjectPrefix, ChangedSubject(DefaultSubjectPrefix, "c.x", "b"))
	require.NoError(t, err)
	require.Equal(t, [2]string{"c.x", "b"}, [2]string{c, b})
	require.True(t, SubjectMatches(ChangedWildcard(DefaultSubjectPrefix), ChangedSubject(DefaultSubjectPrefix, "c", "b")))
	require.False(t, SubjectMatches(GroupSubject(DefaultSubjectPrefix, "c", "b"), ChangedSubject(DefaultSubjectPrefix, "c", "b")))
	_, _, _, err = ParseSubject(DefaultSubjectPrefix, "rmqha.meta.c.b.nope")
	require.ErrorIs(t, err, ErrUnknownTable)
	_, _, _, err = ParseSubject(DefaultSubjectPrefix, "other.c.b.topics")
	require.ErrorIs(t, err, ErrInvalidSubject)
}

func TestAnnouncementRoundTrip(t *testing.T) {
	a := Announcement{Cluster: "c", BrokerName: "b", Table: TableConsumerOffsets, DataVersion: DataVersion{Timestamp: 5, Counter: 7}, Digest: "ab", MasterAddr: "127.0.0.1:1", Epoch: 3, Sequence: 9, SnapshotURL: "http://x/snapshot/c/b/consumerOffsets"}
	got, err := DecodeAnnouncement(AppendAnnouncement(nil, a))
	require.NoError(t, err)
	require.Equal(t, a, got)
	_, err = DecodeAnnouncement([]byte(`{"cluster":"c","brokerName":"b","table":"x"}`))
	require.ErrorIs(t, err, ErrInvalidAnnouncement)
	_, err = DecodeAnnouncement([]byte(`{`))
	require.ErrorIs(t, err, ErrInvalidAnnouncement)
}

func TestSnapshotFromJavaBodies(t *testing.T) {
	// 4.x consumer offsets: bare integer keys and no dataVersion.
	s, err := NewSnapshot("c", "b", TableConsumerOffsets, []byte(`{"offsetTable":{"T@g":{0:12,1:15}}}`), "m:1", 2, time.UnixMilli(1000))
	require.NoError(t, err)
	require.False(t, s.HasVersion)
	require.NotEmpty(t, s.Digest)
	dec, err := meta.DecodeConsumerOffsetSnapshot(s.Body)
	require.NoError(t, err)
	require.EqualValues(t, 15, dec.OffsetTable["T@g"][1])

	s2, err := NewSnapshot("c", "b", TableConsumerOffsets, []byte(`{"offsetTable":{"T@g":{0:12,1:16}}}`), "m:1", 2, time.UnixMilli(1000))
	require.NoError(t, err)
	require.False(t, s.SameContent(s2))

	topics := []byte(`{"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}`)
	s3, err := NewSnapshot("c", "b", TableTopics, topics, "", 0, time.Now())
	require.NoError(t, err)
	require.True(t, s3.HasVersion)
	require.EqualValues(t, 7, s3.DataVersion.Counter)

	enc, err := AppendSnapshot(nil, s3)
	require.NoError(t, err)
	back, err := DecodeSnapshot(enc)
	require.NoError(t, err)
	require.True(t, back.SameContent(s3))
	require.JSONEq(t, string(s3.Body), string(back.Body))

	_, err = NewSnapshot("c", "b", TableTopics, []byte(`{"offsetTable":{}}`), "", 0, time.Now())
	require.ErrorIs(t, err, ErrInvalidSnapshot)
	_, err = NewSnapshot("", "b", TableTopics, topics, "", 0, time.Now())
	require.ErrorIs(t, err, ErrInvalidName)
}

// TestEveryBrokerTableIsReplicated guards against a metadata kind the broker
// persists but metasync does not pull.
func TestEveryBrokerTableIsReplicated(t *testing.T) {
	dir := t.TempDir()
	tb := newTables(t, dir)
	tb.Offsets.Commit("g", "T", 0, 1)
	tb.Delay.Update(1, 1)
	_, err := tb.Groups.Put(meta.NewSubscriptionGroupConfig("g"))
	require.NoError(t, err)
	require.NoError(t, tb.PersistOffsets())
	entries, err := os.ReadDir(filepath.Join(dir, "config"))
	require.NoError(t, err)
	covered := map[string]bool{}
	for _, tbl := range AllTables {
		covered[tbl.FileName()] = true
		require.True(t, tbl.RequestCode() > 0)
	}
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != ".json" {
			continue // .bak, .tmp
		}
		require.True(t, covered[name], "broker file %s is not replicated by metasync", name)
	}
}

func TestHTTPSnapshotsTriesNextURL(t *testing.T) {
	snap, err := NewSnapshot("c", "b", TableTopics, newTables(t, "").Topics.Snapshot(), "", 0, time.Now())
	require.NoError(t, err)
	body, err := AppendSnapshot(nil, snap)
	require.NoError(t, err)
	notOwner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer notOwner.Close()
	owner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != SnapshotPath("c", "b", TableTopics) {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		_, _ = w.Write(body)
	}))
	defer owner.Close()
	c := NewHTTPSnapshots(notOwner.URL, owner.URL)
	got, err := c.Fetch(context.Background(), "c", "b", TableTopics, "")
	require.NoError(t, err)
	require.True(t, got.SameContent(snap))
	_, err = c.Fetch(context.Background(), "c", "b", TableDelayOffsets, "")
	require.ErrorIs(t, err, ErrNoSnapshot)
	require.ErrorIs(t, err, ErrNotOwner)
	_, err = NewHTTPSnapshots().Fetch(context.Background(), "c", "b", TableTopics, "")
	require.ErrorIs(t, err, ErrUnavailable)
	// A hint outside the configured instances is not followed.
	_, err = NewHTTPSnapshots(notOwner.URL).Fetch(context.Background(), "c", "b", TableTopics, owner.URL+SnapshotPath("c", "b", TableTopics))
	require.ErrorIs(t, err, ErrNotOwner)
	got, err = NewHTTPSnapshots().Fetch(context.Background(), "c", "b", TableTopics, owner.URL+SnapshotPath("c", "b", TableTopics))
	require.NoError(t, err)
}

func TestPullTableOverRemoting(t *testing.T) {
	master := newTables(t, "")
	_, err := master.Topics.Put(meta.TopicConfig{TopicName: "T", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6})
	require.NoError(t, err)
	cfg := remoting.DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	srv, err := remoting.NewServer(cfg)
	require.NoError(t, err)
	srv.HandleFunc(remoting.GetAllTopicConfig, func(w remoting.ResponseWriter, req *remoting.Command) {
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = master.Topics.Snapshot()
		_ = w.Write(resp)
	})
	srv.HandleFunc(remoting.GetAllDelayOffset, func(w remoting.ResponseWriter, req *remoting.Command) {
		_ = w.Write(remoting.NewResponse(req, remoting.SystemError, "no"))
	})
	require.NoError(t, srv.Start())
	defer srv.Close()
	cl := remoting.NewClient(remoting.DefaultClientConfig())
	defer cl.Close()
	m := &RemotingMaster{Client: cl, Addr: func() string { return srv.Addr().String() }}
	body, addr, err := m.Pull(context.Background(), TableTopics)
	require.NoError(t, err)
	require.Equal(t, srv.Addr().String(), addr)
	s, err := NewSnapshot("c", "b", TableTopics, body, addr, 0, time.Now())
	require.NoError(t, err)
	require.True(t, s.DataVersion.Equal(master.Topics.DataVersion()))
	_, _, err = m.Pull(context.Background(), TableDelayOffsets)
	require.ErrorIs(t, err, ErrMasterRefused)
	_, err = PullTable(context.Background(), cl, "", TableTopics)
	require.ErrorIs(t, err, ErrUnavailable)
}

func FuzzDecodeAnnouncement(f *testing.F) {
	f.Add(AppendAnnouncement(nil, Announcement{Cluster: "c", BrokerName: "b", Table: TableTopics}))
	f.Add([]byte(`{"table":"topics"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAnnouncement(data)
		if err != nil {
			return
		}
		b, err := DecodeAnnouncement(AppendAnnouncement(nil, a))
		if err != nil || b != a {
			t.Fatalf("round trip: %v %+v %+v", err, a, b)
		}
	})
}

func FuzzDecodeSnapshot(f *testing.F) {
	s, _ := NewSnapshot("c", "b", TableConsumerOffsets, []byte(`{"offsetTable":{"T@g":{0:12}}}`), "", 0, time.Unix(1, 0))
	enc, _ := AppendSnapshot(nil, s)
	f.Add(enc)
	f.Add([]byte(`{"cluster":"c","brokerName":"b","table":"topics","body":{"topicConfigTable":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSnapshot(data)
		if err != nil {
			return
		}
		if _, err := AppendSnapshot(nil, s); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
	})
}

func FuzzNormalizeBody(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{"T@g":{0:12,1:15}}}`), uint8(2))
	f.Add([]byte(`{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{}}`), uint8(0))
	f.Fuzz(func(t *testing.T, body []byte, which uint8) {
		tbl := AllTables[int(which)%len(AllTables)]
		_, _, _, _, _ = NormalizeBody(tbl, body)
	})
}

func FuzzParseSubject(f *testing.F) {
	f.Add(Subject(DefaultSubjectPrefix, "c", "b", TableTopics))
	f.Add("rmqha.meta.%2.b.topics")
	f.Fuzz(func(t *testing.T, subj string) {
		c, b, tbl, err := ParseSubject(DefaultSubjectPrefix, subj)
		if err != nil {
			return
		}
		c2, b2, t2, err := ParseSubject(DefaultSubjectPrefix, Subject(DefaultSubjectPrefix, c, b, tbl))
		if err != nil || c2 != c || b2 != b || t2 != tbl {
			t.Fatalf("round trip of %q: %v", subj, err)
		}
	})
}
