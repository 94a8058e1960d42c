package kvconfig_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/services/namesrv/kvconfig"
	"github.com/rmqha/rmqha/tools/harness"
	"github.com/stretchr/testify/require"
)

// conformance is what every Store does; open returns an empty store with lim.
func conformance(t *testing.T, open func(t *testing.T, lim kvconfig.Limits) kvconfig.Store) {
	t.Run("PutGetDeleteList", func(t *testing.T) {
		s := open(t, kvconfig.DefaultLimits())
		_, ok, err := s.Get("ORDER_TOPIC_CONFIG", "TopicA")
		require.NoError(t, err)
		require.False(t, ok)
		_, ok, err = s.List("ORDER_TOPIC_CONFIG")
		require.NoError(t, err)
		require.False(t, ok, "an unknown namespace is not found")

		require.NoError(t, s.Put("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4;broker-b:4"))
		require.NoError(t, s.Put("ORDER_TOPIC_CONFIG", "Topic/B ü", "broker-a:8"))
		require.NoError(t, s.Put("other", "TopicA", ""))
		v, ok, err := s.Get("ORDER_TOPIC_CONFIG", "TopicA")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "broker-a:4;broker-b:4", v)
		v, ok, err = s.Get("other", "TopicA")
		require.NoError(t, err)
		require.True(t, ok, "an empty value is a value")
		require.Equal(t, "", v)

		require.NoError(t, s.Put("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:2"))
		all, ok, err := s.List("ORDER_TOPIC_CONFIG")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, map[string]string{"TopicA": "broker-a:2", "Topic/B ü": "broker-a:8"}, all)

		require.NoError(t, s.Delete("ORDER_TOPIC_CONFIG", "TopicA"))
		require.NoError(t, s.Delete("ORDER_TOPIC_CONFIG", "TopicA"), "deleting a missing item is fine")
		require.NoError(t, s.Delete("nowhere", "x"))
		_, ok, err = s.Get("ORDER_TOPIC_CONFIG", "TopicA")
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, s.Delete("ORDER_TOPIC_CONFIG", "Topic/B ü"))
		_, ok, err = s.List("ORDER_TOPIC_CONFIG")
		require.NoError(t, err)
		require.False(t, ok, "a namespace without items is gone")
	})
	t.Run("Limits", func(t *testing.T) {
		s := open(t, kvconfig.Limits{MaxEntries: 3, MaxNameLength: 8, MaxValueSize: 4})
		require.ErrorIs(t, s.Put("", "k", "v"), kvconfig.ErrInvalid)
		require.ErrorIs(t, s.Put("ns", "", "v"), kvconfig.ErrInvalid)
		require.ErrorIs(t, s.Put("ns", "123456789", "v"), kvconfig.ErrLimit)
		require.ErrorIs(t, s.Put("ns", "k", "12345"), kvconfig.ErrLimit)
		for i := 0; i < 3; i++ {
			require.NoError(t, s.Put("ns", fmt.Sprint("k", i), "v"))
		}
		require.ErrorIs(t, s.Put("ns", "k3", "v"), kvconfig.ErrLimit, "entries bound")
		require.NoError(t, s.Put("ns", "k0", "w"), "replacing needs no room")
		require.NoError(t, s.Delete("ns", "k1"))
		require.NoError(t, s.Put("ns2", "k3", "v"))
		_, ok, err := s.Get("ns", "k3")
		require.NoError(t, err)
		require.False(t, ok)
	})
}

func TestFileConformance(t *testing.T) {
	conformance(t, func(t *testing.T, lim kvconfig.Limits) kvconfig.Store {
		s, err := kvconfig.OpenFile(vfs.NewMem(), "/ns/kvConfig.json", lim)
		require.NoError(t, err)
		return s
	})
}

func TestConsulConformance(t *testing.T) {
	c := harness.StartConsulT(t)
	cl, err := discovery.NewClient(c.HTTPAddr())
	require.NoError(t, err)
	conformance(t, func(t *testing.T, lim kvconfig.Limits) kvconfig.Store {
		_, err := cl.KV().DeleteTree(kvconfig.ConsulPrefix, nil)
		require.NoError(t, err)
		s, err := kvconfig.NewConsul(cl, lim)
		require.NoError(t, err)
		return s
	})
	// Two stores on one Consul (two name servers) see each other's items.
	a, err := kvconfig.NewConsul(cl, kvconfig.DefaultLimits())
	require.NoError(t, err)
	b, err := kvconfig.NewConsul(cl, kvconfig.DefaultLimits())
	require.NoError(t, err)
	require.NoError(t, a.Put("ns", "shared", "yes"))
	v, ok, err := b.Get("ns", "shared")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "yes", v)
}

// TestFileLayout: the file is RocketMQ's kvConfig.json; RocketMQ's own file loads; a restart
// (a power loss after the answer) keeps every acknowledged change.
func TestFileLayout(t *testing.T) {
	fsys := vfs.NewCrashableMem()
	path := filepath.Join("/home", "namesrv", "kvConfig.json")
	s, err := kvconfig.OpenFile(fsys, path, kvconfig.DefaultLimits())
	require.NoError(t, err)
	require.NoError(t, s.Put("ORDER_TOPIC_CONFIG", "T", "broker-a:4"))
	require.NoError(t, s.Put("ns", "k", "v"))
	require.NoError(t, s.Delete("ns", "k"))

	crashed := fsys.CrashClone(1)
	data, err := readFile(crashed, path)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(data, &got))
	require.Equal(t, map[string]any{"configTable": map[string]any{"ORDER_TOPIC_CONFIG": map[string]any{"T": "broker-a:4"}}}, got)
	again, err := kvconfig.OpenFile(crashed, path, kvconfig.DefaultLimits())
	require.NoError(t, err)
	v, ok, err := again.Get("ORDER_TOPIC_CONFIG", "T")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "broker-a:4", v)

	// A file RocketMQ wrote (fastjson, pretty-printed).
	java := vfs.NewMem()
	writeFile(t, java, "/k.json", "{\n\t\"configTable\":{\n\t\t\"ORDER_TOPIC_CONFIG\":{\n\t\t\t\"TopicTest\":\"broker-a:8\"\n\t\t}\n\t}\n}")
	js, err := kvconfig.OpenFile(java, "/k.json", kvconfig.DefaultLimits())
	require.NoError(t, err)
	all, ok, err := js.List("ORDER_TOPIC_CONFIG")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, map[string]string{"TopicTest": "broker-a:8"}, all)

	// Not a KV configuration, or beyond the limits: refused at open.
	bad := vfs.NewMem()
	writeFile(t, bad, "/bad.json", "{\"configTable\":[1,2]}")
	_, err = kvconfig.OpenFile(bad, "/bad.json", kvconfig.DefaultLimits())
	require.ErrorIs(t, err, kvconfig.ErrInvalid)
	writeFile(t, bad, "/big.json", `{"configTable":{"ns":{"k":"`+strings.Repeat("x", 100)+`"}}}`)
	_, err = kvconfig.OpenFile(bad, "/big.json", kvconfig.Limits{MaxEntries: 10, MaxNameLength: 10, MaxValueSize: 10})
	require.ErrorIs(t, err, kvconfig.ErrLimit)
}

func readFile(fsys vfs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	_, err = f.ReadAt(buf, 0)
	return buf, err
}

func writeFile(t *testing.T, fsys vfs.FS, name, data string) {
	t.Helper()
	f, err := fsys.Create(name)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte(data), 0)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())
}

// FuzzOpenFile: no file content makes OpenFile panic.
func FuzzOpenFile(f *testing.F) {
	f.Add([]byte(`{"configTable":{"ns":{"k":"v"}}}`))
	f.Add([]byte(`{"configTable":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := vfs.NewMem()
		writeFile(t, fsys, "/f.json", string(data))
		s, err := kvconfig.OpenFile(fsys, "/f.json", kvconfig.DefaultLimits())
		if err == nil {
			_, _, _ = s.List("ns")
		}
	})
}
