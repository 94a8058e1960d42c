package broker

import (
	"strconv"
	"sync"
	"testing"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/stretchr/testify/require"
)

// nsStub is a tiny in-process name server: it keeps what brokers register and answers
// GET_ROUTEINFO_BY_TOPIC from it, so real clients can find in-process brokers.
type nsStub struct {
	srv *remoting.Server
	mu  sync.Mutex
	// brokerName -> id -> addr
	addrs   map[string]map[int64]string
	haAddrs map[string]map[int64]string
	cluster map[string]string
	topics  map[string]map[string]route.TopicConfig // brokerName -> topics (from the master)
	regs    int
	unregs  int
	epochs  []string
	reqs    []*remoting.Command // every REGISTER_BROKER and UNREGISTER_BROKER, in arrival order
}

func startNSStub(t *testing.T) *nsStub {
	t.Helper()
	cfg := remoting.DefaultServerConfig()
	cfg.Addr = "127.0.0.1:0"
	srv, err := remoting.NewServer(cfg)
	require.NoError(t, err)
	ns := &nsStub{srv: srv, addrs: map[string]map[int64]string{}, haAddrs: map[string]map[int64]string{},
		cluster: map[string]string{}, topics: map[string]map[string]route.TopicConfig{}}
	srv.HandleFunc(remoting.RegisterBroker, ns.register)
	srv.HandleFunc(remoting.UnregisterBroker, ns.unregister)
	srv.HandleFunc(remoting.GetRouteInfoByTopic, ns.route)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { srv.Close() })
	return ns
}

func (ns *nsStub) addr() string { return ns.srv.Addr().String() }

func (ns *nsStub) register(w remoting.ResponseWriter, req *remoting.Command) {
	if err := route.CheckBodyCRC32(req.Body, int32(atoi(req.Ext("bodyCrc32")))); err != nil {
		_ = w.Write(remoting.NewResponse(req, remoting.SystemError, "crc32 not match"))
		return
	}
	body, err := route.DecodeRegisterBrokerBody(req.Body)
	if err != nil {
		_ = w.Write(remoting.NewResponse(req, remoting.SystemError, err.Error()))
		return
	}
	name := req.Ext("brokerName")
	id := int64(atoi(req.Ext("brokerId")))
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.reqs = append(ns.reqs, req)
	ns.regs++
	ns.epochs = append(ns.epochs, req.Ext("epoch"))
	if ns.addrs[name] == nil {
		ns.addrs[name] = map[int64]string{}
		ns.haAddrs[name] = map[int64]string{}
	}
	ns.addrs[name][id] = req.Ext("brokerAddr")
	ns.haAddrs[name][id] = req.Ext("haServerAddr")
	ns.cluster[name] = req.Ext("clusterName")
	if id == 0 {
		ns.topics[name] = body.TopicConfigSerializeWrapper.TopicConfigTable
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	if id != 0 {
		if m, ok := ns.addrs[name][0]; ok {
			resp.ExtFields["masterAddr"] = m
			resp.ExtFields["haServerAddr"] = ns.haAddrs[name][0]
		}
	}
	_ = w.Write(resp)
}

func (ns *nsStub) unregister(w remoting.ResponseWriter, req *remoting.Command) {
	name := req.Ext("brokerName")
	id := int64(atoi(req.Ext("brokerId")))
	ns.mu.Lock()
	ns.reqs = append(ns.reqs, req)
	ns.unregs++
	delete(ns.addrs[name], id)
	ns.mu.Unlock()
	_ = w.Write(remoting.NewResponse(req, remoting.Success, ""))
}

func (ns *nsStub) route(w remoting.ResponseWriter, req *remoting.Command) {
	topic := req.Ext("topic")
	ns.mu.Lock()
	var rd route.TopicRouteData
	rd.FilterServerTable = map[string][]string{}
	for name, tt := range ns.topics {
		tc, ok := tt[topic]
		if !ok || len(ns.addrs[name]) == 0 {
			continue
		}
		rd.QueueDatas = append(rd.QueueDatas, route.QueueData{BrokerName: name, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicSysFlag: tc.TopicSysFlag})
		addrs := map[int64]string{}
		for id, a := range ns.addrs[name] {
			addrs[id] = a
		}
		rd.BrokerDatas = append(rd.BrokerDatas, route.BrokerData{Cluster: ns.cluster[name], BrokerName: name, BrokerAddrs: addrs})
	}
	ns.mu.Unlock()
	if len(rd.QueueDatas) == 0 {
		_ = w.Write(remoting.NewResponse(req, remoting.TopicNotExist, "No topic route info in name server for the topic: "+topic))
		return
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.Body = route.AppendTopicRouteData(nil, rd)
	_ = w.Write(resp)
}

func (ns *nsStub) hasTopic(broker, topic string) bool {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	_, ok := ns.topics[broker][topic]
	return ok
}

func (ns *nsStub) counts() (regs, unregs int) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.regs, ns.unregs
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
