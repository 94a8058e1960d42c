package registry

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/route"
)

func TestCheckAddr(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:10911", "[::1]:10911", "broker-a.example.com:1", "rmqha_master_1:65535", "localhost:9876"} {
		if err := CheckAddr("brokerAddr", ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:x", ":10911", "a b:1", "a..b:1",
		"-:1", strings.Repeat("a", 64) + ".b:1", "a/b:1", "[::1:1", strings.Repeat("a.", 200) + ":1"} {
		err := CheckAddr("brokerAddr", bad)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "brokerAddr") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzValidate(f *testing.F) {
	f.Add("DefaultCluster", "broker-a", int64(0), "127.0.0.1:10911", "127.0.0.1:10912", "TopicTest")
	f.Add("", "b/c", int64(-1), "[::1]:0", "x", "%RETRY%g")
	f.Fuzz(func(t *testing.T, cluster, name string, id int64, addr, ha, topic string) {
		tc := route.NewTopicConfig(topic)
		r := Registration{Cluster: cluster, BrokerName: name, BrokerID: id, Addr: addr, HAAddr: ha,
			Topics: route.TopicConfigSerializeWrapper{TopicConfigTable: map[string]route.TopicConfig{topic: tc}}}
		err := Validate(r, DefaultLimits())
		if err == nil {
			if len(cluster) > 127 || len(name) > 127 || len(topic) > 127 || strings.ContainsAny(cluster+name, "/ \x00") || id < 0 {
				t.Fatalf("accepted %+v", r)
			}
			m := NewMemory()
			if _, err := m.Register(r, time.Unix(1_700_000_000, 0)); err != nil && !errors.Is(err, ErrLimit) {
				t.Fatalf("valid registration refused: %v", err)
			}
			return
		}
		if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrLimit) {
			t.Fatalf("error without a sentinel: %v", err)
		}
		if len(err.Error()) > 512 {
			t.Fatalf("error of %d bytes", len(err.Error()))
		}
	})
}
