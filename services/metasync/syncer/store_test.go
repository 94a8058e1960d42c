package syncer

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

func TestStoreReloadSkipsDamage(t *testing.T) {
	root := t.TempDir()
	st, err := OpenStore(vfs.Default, root, quietLogger())
	require.NoError(t, err)
	tb := openTables(t, "")
	snap, err := metasync.NewSnapshot("c.1", "b/2", metasync.TableTopics, tb.Topics.Snapshot(), "m:1", 3, time.Now())
	require.NoError(t, err)
	stored, changed, err := st.Put(snap)
	require.NoError(t, err)
	require.True(t, changed)
	require.EqualValues(t, 1, stored.Sequence)
	_, changed, err = st.Put(snap)
	require.NoError(t, err)
	require.False(t, changed, "same version: nothing written")

	off, err := metasync.NewSnapshot("c.1", "b/2", metasync.TableConsumerOffsets, tb.Offsets.Snapshot(), "m:1", 3, time.Now())
	require.NoError(t, err)
	_, _, err = st.Put(off)
	require.NoError(t, err)
	// A torn temporary file and a damaged snapshot are ignored at start.
	dir := filepath.Dir(st.path("c.1", "b/2", metasync.TableTopics))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "delayOffsets.json.tmp"), []byte("{"), 0o644))
	require.NoError(t, os.WriteFile(st.path("c.1", "b/2", metasync.TableConsumerOffsets), []byte(`{"cluster":`), 0o644))

	re, err := OpenStore(vfs.Default, root, quietLogger())
	require.NoError(t, err)
	got, ok := re.Get("c.1", "b/2", metasync.TableTopics)
	require.True(t, ok)
	require.True(t, got.SameContent(snap))
	require.EqualValues(t, 1, got.Sequence)
	require.Equal(t, int64(3), got.Epoch)
	_, ok = re.Get("c.1", "b/2", metasync.TableConsumerOffsets)
	require.False(t, ok)
}

func TestStorePutFailsCleanly(t *testing.T) {
	mem := vfs.NewMem()
	st, err := OpenStore(mem, "/root", quietLogger())
	require.NoError(t, err)
	efs := vfs.NewErrorFS(mem, vfs.InjectorFunc(func(op vfs.Op, _ string) error {
		if op == vfs.OpSync {
			return syscall.EIO
		}
		return nil
	}))
	st.fs = efs
	tb := openTables(t, "")
	snap, err := metasync.NewSnapshot("c", "b", metasync.TableTopics, tb.Topics.Snapshot(), "", 0, time.Now())
	require.NoError(t, err)
	_, changed, err := st.Put(snap)
	require.Error(t, err)
	require.False(t, changed)
	_, ok := st.Get("c", "b", metasync.TableTopics)
	require.False(t, ok, "a snapshot that is not on disk is not served")
}

func TestNamesrvDiscoverer(t *testing.T) {
	cfg := remoting.DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	srv, err := remoting.NewServer(cfg)
	require.NoError(t, err)
	srv.HandleFunc(remoting.GetBrokerClusterInfo, func(w remoting.ResponseWriter, req *remoting.Command) {
		resp := remoting.NewResponse(req, remoting.Success, "")
		resp.Body = route.AppendClusterInfo(nil, route.ClusterInfo{
			BrokerAddrTable: map[string]route.BrokerData{
				"broker-a": {Cluster: "C", BrokerName: "broker-a", BrokerAddrs: map[int64]string{0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}},
				"broker-b": {Cluster: "C", BrokerName: "broker-b", BrokerAddrs: map[int64]string{1: "127.0.0.1:10931"}},
			},
			ClusterAddrTable: map[string][]string{"C": {"broker-a", "broker-b"}},
		})
		_ = w.Write(resp)
	})
	require.NoError(t, srv.Start())
	defer srv.Close()
	rc := remoting.NewClient(remoting.DefaultClientConfig())
	defer rc.Close()
	d := NamesrvDiscoverer{Client: rc, Addrs: splitNamesrv("127.0.0.1:1;" + srv.Addr().String()), Interval: time.Hour, Timeout: time.Second, Log: quietLogger()}
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan []Target, 1)
	go d.Run(ctx, func(ts []Target) { got <- ts; cancel() })
	select {
	case ts := <-got:
		require.Equal(t, []Target{{Cluster: "C", BrokerName: "broker-a", Addr: "127.0.0.1:10911"}}, ts)
	case <-time.After(10 * time.Second):
		t.Fatal("no targets")
	}
}
