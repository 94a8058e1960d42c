package nameserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/services/namesrv/kvconfig"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/sirupsen/logrus"
)

// Admin requests (RocketMQ's DefaultRequestProcessor and RouteInfoManager):
//
//	WIPE_WRITE_PERM_OF_BROKER (205)  brokerName → wipeTopicCount: every topic with queue data of
//	                                 that broker name loses PERM_WRITE in this name server's
//	                                 routes (producers drain the broker; consumers keep reading)
//	ADD_WRITE_PERM_OF_BROKER (327)   brokerName → addTopicCount: those queue data become
//	                                 PERM_READ|PERM_WRITE (RocketMQ sets exactly that)
//	DELETE_TOPIC_IN_NAMESRV (216)    topic [clusterName] → the topic's queue data (of that
//	                                 cluster's brokers) leave this name server's routes
//	GET_TOPICS_BY_CLUSTER (224)      cluster → TopicList
//	GET_SYSTEM_TOPIC_LIST_FROM_NS (304)  TopicList of cluster and broker names, brokerAddr
//	GET_UNIT_TOPIC_LIST (311), GET_HAS_UNIT_SUB_TOPIC_LIST (312),
//	GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST (313)  TopicList by the unit bits of topicSysFlag
//	PUT_KV_CONFIG (100), GET_KV_CONFIG (101), DELETE_KV_CONFIG (102),
//	GET_KVLIST_BY_NAMESPACE (219)    the KV configuration (package kvconfig); KVTable body
//	GET_NAMESRV_CONFIG (319)         "key=value\n" of the effective configuration, secrets masked
//	UPDATE_NAMESRV_CONFIG (318)      properties body → written to the config file (config_update.go)
//	QUERY_DATA_VERSION (322)         brokerAddr + DataVersion body → changed, and the version
//	                                 this name server holds for that broker as body
//
// Bodies: TopicList {"brokerAddr":"...","topicList":[...]} (brokerAddr only for 304), KVTable
// {"table":{"k":"v"}}, DataVersion {"counter":..,"stateVersion":..,"timestamp":..}.
//
// As in RocketMQ, the route changes (wipe, add, delete) are this name server's own: an admin
// tool sends them to every name server (mqadmin does), and they hold until the broker
// registers a changed topic table (a new dataVersion) or re-registers over a new connection,
// which rebuilds its queue data from what it sends. With Consul they overlay the shared
// registry in the same way.
//
// Who may send them: the writes (100, 102, 205, 216, 318, 327), QUERY_DATA_VERSION and
// GET_NAMESRV_CONFIG change routes or reveal configuration, so they are guarded like broker
// registration: with aclEnable an admin account (acl.NeedsAdmin); otherwise a request signed
// under access key "rmqha-broker" with the registration secret (mqadmin
// -registrationSecretFile), or anyone only with registrationAllowUnauthenticated. The reads
// are lookups, open like routes (with aclEnable, any account).

// adminWriteCodes are the codes adminGuard authenticates when ACL is off.
var adminWriteCodes = map[int32]bool{
	remoting.PutKVConfig: true, remoting.DeleteKVConfig: true, remoting.WipeWritePermOfBroker: true,
	remoting.AddWritePermOfBroker: true, remoting.DeleteTopicInNameSrv: true,
	remoting.QueryDataVersion: true, remoting.GetNamesrvConfig: true, remoting.UpdateNamesrvConfig: true,
}

// Topic system flag bits (TopicSysFlag).
const (
	topicSysFlagUnit    = 1 << 0
	topicSysFlagUnitSub = 1 << 1
)

// Overrides of a broker name's queue data (permMode).
const (
	permAsRegistered = iota
	permWiped        // PERM_WRITE cleared
	permAdded        // PERM_READ|PERM_WRITE
)

// routeOverlay is this name server's admin changes to the routes the registry gives.
type routeOverlay struct {
	mu sync.Mutex
	// perm by broker name.
	perm map[string]int
	// deleted: topic → broker names whose queue data of it were deleted.
	deleted map[string]map[string]bool
	// versions: broker address → what its latest registration said.
	versions map[string]brokerVersion
}

type brokerVersion struct {
	brokerName string
	brokerID   int64
	connID     uint64
	version    route.DataVersion
}

// maxOverlayVersions bounds versions (one per registered broker address; registrations are
// already bounded per cluster and in clusters, this is a backstop).
const maxOverlayVersions = 1 << 16

func newRouteOverlay() *routeOverlay {
	return &routeOverlay{perm: map[string]int{}, deleted: map[string]map[string]bool{}, versions: map[string]brokerVersion{}}
}

// registered records a successful registration; a master's changed topic table or new
// connection drops the overrides of its broker name (RocketMQ rebuilds the queue data then).
func (o *routeOverlay) registered(r registry.Registration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, seen := o.versions[r.Addr]
	if seen || len(o.versions) < maxOverlayVersions {
		o.versions[r.Addr] = brokerVersion{brokerName: r.BrokerName, brokerID: r.BrokerID, connID: r.ConnID, version: r.Topics.DataVersion}
	}
	if r.BrokerID != route.MasterID {
		return
	}
	if seen && prev.connID == r.ConnID && prev.version.Equal(r.Topics.DataVersion) {
		return
	}
	delete(o.perm, r.BrokerName)
	for topic, names := range o.deleted {
		delete(names, r.BrokerName)
		if len(names) == 0 {
			delete(o.deleted, topic)
		}
	}
}

// apply returns rd as this name server answers it: deleted queue data removed (with the
// broker data no queue data names any more), perm overrides applied. ok is false when no
// queue data is left.
func (o *routeOverlay) apply(topic string, rd route.TopicRouteData) (route.TopicRouteData, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	gone := o.deleted[topic]
	if len(gone) == 0 && len(o.perm) == 0 {
		return rd, len(rd.QueueDatas) > 0
	}
	out := rd
	out.QueueDatas = make([]route.QueueData, 0, len(rd.QueueDatas))
	keep := map[string]bool{}
	for _, q := range rd.QueueDatas {
		if gone[q.BrokerName] {
			continue
		}
		switch o.perm[q.BrokerName] {
		case permWiped:
			q.Perm &^= route.PermWrite
		case permAdded:
			q.Perm = route.PermRead | route.PermWrite
		}
		keep[q.BrokerName] = true
		out.QueueDatas = append(out.QueueDatas, q)
	}
	out.BrokerDatas = make([]route.BrokerData, 0, len(rd.BrokerDatas))
	for _, b := range rd.BrokerDatas {
		if keep[b.BrokerName] {
			out.BrokerDatas = append(out.BrokerDatas, b)
		}
	}
	return out, len(out.QueueDatas) > 0
}

// route is the registry's route for topic with this name server's admin changes.
func (s *Server) route(topic string) (route.TopicRouteData, bool) {
	rd, ok := s.reg.Route(topic)
	if !ok {
		return rd, false
	}
	return s.overlay.apply(topic, rd)
}

// topics lists the topics this name server routes, sorted.
func (s *Server) topics() []string {
	all := s.reg.Topics()
	s.overlay.mu.Lock()
	anyDeleted := len(s.overlay.deleted) > 0
	s.overlay.mu.Unlock()
	if !anyDeleted {
		return all
	}
	out := all[:0:0]
	for _, t := range all {
		if _, ok := s.route(t); ok {
			out = append(out, t)
		}
	}
	return out
}

// setPerm applies a perm override to brokerName and returns the number of topics with queue
// data of it (RocketMQ's count).
func (s *Server) setPerm(brokerName string, mode int) int {
	n := 0
	for _, t := range s.topics() {
		rd, ok := s.route(t)
		if !ok {
			continue
		}
		for _, q := range rd.QueueDatas {
			if q.BrokerName == brokerName {
				n++
				break
			}
		}
	}
	s.overlay.mu.Lock()
	s.overlay.perm[brokerName] = mode
	s.overlay.mu.Unlock()
	return n
}

func (s *Server) wipeWritePerm(w remoting.ResponseWriter, req *remoting.Command) {
	s.changePerm(w, req, permWiped, "wipeTopicCount", "write permission wiped")
}

func (s *Server) addWritePerm(w remoting.ResponseWriter, req *remoting.Command) {
	s.changePerm(w, req, permAdded, "addTopicCount", "write permission added")
}

func (s *Server) changePerm(w remoting.ResponseWriter, req *remoting.Command, mode int, countKey, what string) {
	name := req.Ext("brokerName")
	if name == "" {
		reply(w, req, remoting.SystemError, "brokerName is null", nil)
		return
	}
	if err := registry.CheckNames("c", name, s.lim); err != nil {
		reply(w, req, remoting.SystemError, err.Error(), nil)
		return
	}
	n := s.setPerm(name, mode)
	s.log.WithFields(logrus.Fields{"broker": name, "topics": n, "peer": w.Conn().RemoteAddr()}).Info(what)
	s.m.adminChanges.WithLabelValues(remoting.RequestName(req.Code)).Inc()
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt(countKey, strconv.Itoa(n))
	_ = w.Write(resp)
}

func (s *Server) deleteTopic(w remoting.ResponseWriter, req *remoting.Command) {
	topic, cluster := req.Ext("topic"), req.Ext("clusterName")
	if topic == "" {
		reply(w, req, remoting.SystemError, "topic is null", nil)
		return
	}
	rd, ok := s.route(topic)
	if ok {
		var inCluster map[string]bool
		if cluster != "" {
			inCluster = map[string]bool{}
			for _, n := range s.reg.ClusterInfo().ClusterAddrTable[cluster] {
				inCluster[n] = true
			}
		}
		s.overlay.mu.Lock()
		if len(s.overlay.deleted) < maxOverlayVersions || s.overlay.deleted[topic] != nil {
			names := s.overlay.deleted[topic]
			if names == nil {
				names = map[string]bool{}
				s.overlay.deleted[topic] = names
			}
			for _, q := range rd.QueueDatas {
				if inCluster == nil || inCluster[q.BrokerName] {
					names[q.BrokerName] = true
				}
			}
		}
		s.overlay.mu.Unlock()
		s.log.WithFields(logrus.Fields{"topic": topic, "cluster": cluster, "peer": w.Conn().RemoteAddr()}).Info("topic deleted from routes")
		s.m.adminChanges.WithLabelValues(remoting.RequestName(req.Code)).Inc()
	}
	reply(w, req, remoting.Success, "", nil)
}

// appendTopicList writes RocketMQ's TopicList body (fastjson: fields sorted, brokerAddr only
// when set).
func appendTopicList(dst []byte, topics []string, brokerAddr string) []byte {
	dst = append(dst, '{')
	if brokerAddr != "" {
		dst = append(dst, `"brokerAddr":`...)
		dst = route.AppendString(dst, brokerAddr)
		dst = append(dst, ',')
	}
	dst = append(dst, `"topicList":`...)
	if topics == nil {
		topics = []string{}
	}
	dst = route.AppendStringList(dst, topics)
	return append(dst, '}')
}

func (s *Server) topicsByCluster(w remoting.ResponseWriter, req *remoting.Command) {
	cluster := req.Ext("cluster")
	names := map[string]bool{}
	for _, n := range s.reg.ClusterInfo().ClusterAddrTable[cluster] {
		names[n] = true
	}
	var out []string
	if len(names) > 0 {
		for _, t := range s.topics() {
			rd, ok := s.route(t)
			if !ok {
				continue
			}
			for _, q := range rd.QueueDatas {
				if names[q.BrokerName] {
					out = append(out, t)
					break
				}
			}
		}
	}
	reply(w, req, remoting.Success, "", appendTopicList(nil, out, ""))
}

func (s *Server) systemTopicList(w remoting.ResponseWriter, req *remoting.Command) {
	ci := s.reg.ClusterInfo()
	set := map[string]bool{}
	for cluster, names := range ci.ClusterAddrTable {
		set[cluster] = true
		for _, n := range names {
			set[n] = true
		}
	}
	out := sortedSet(set)
	addr := ""
	for _, name := range sortedKeysOf(ci.BrokerAddrTable) {
		bd := ci.BrokerAddrTable[name]
		ids := make([]int64, 0, len(bd.BrokerAddrs))
		for id := range bd.BrokerAddrs {
			ids = append(ids, id)
		}
		if len(ids) > 0 {
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			addr = bd.BrokerAddrs[ids[0]]
			break
		}
	}
	reply(w, req, remoting.Success, "", appendTopicList(nil, out, addr))
}

// unitTopics answers the three unit lists: want decides from the first queue data's
// topicSysFlag (RocketMQ looks at the first one).
func (s *Server) unitTopics(want func(flag int32) bool) func(w remoting.ResponseWriter, req *remoting.Command) {
	return func(w remoting.ResponseWriter, req *remoting.Command) {
		var out []string
		for _, t := range s.topics() {
			if rd, ok := s.route(t); ok && want(rd.QueueDatas[0].TopicSysFlag) {
				out = append(out, t)
			}
		}
		reply(w, req, remoting.Success, "", appendTopicList(nil, out, ""))
	}
}

func (s *Server) putKVConfig(w remoting.ResponseWriter, req *remoting.Command) {
	ns, key, value := req.Ext("namespace"), req.Ext("key"), req.Ext("value")
	if ns == "" || key == "" {
		reply(w, req, remoting.SystemError, "namespace or key is null", nil)
		return
	}
	if err := s.kv.Put(ns, key, value); err != nil {
		reply(w, req, remoting.SystemError, err.Error(), nil)
		return
	}
	s.log.WithFields(logrus.Fields{"namespace": ns, "key": key, "peer": w.Conn().RemoteAddr()}).Info("KV config put")
	s.m.adminChanges.WithLabelValues(remoting.RequestName(req.Code)).Inc()
	reply(w, req, remoting.Success, "", nil)
}

func (s *Server) getKVConfig(w remoting.ResponseWriter, req *remoting.Command) {
	ns, key := req.Ext("namespace"), req.Ext("key")
	v, ok, err := s.kv.Get(ns, key)
	if err != nil {
		reply(w, req, remoting.SystemError, err.Error(), nil)
		return
	}
	if !ok {
		reply(w, req, remoting.QueryNotFound, "No config item, Namespace: "+ns+" Key: "+key, nil)
		return
	}
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt("value", v)
	_ = w.Write(resp)
}

func (s *Server) deleteKVConfig(w remoting.ResponseWriter, req *remoting.Command) {
	ns, key := req.Ext("namespace"), req.Ext("key")
	if err := s.kv.Delete(ns, key); err != nil {
		reply(w, req, remoting.SystemError, err.Error(), nil)
		return
	}
	s.log.WithFields(logrus.Fields{"namespace": ns, "key": key, "peer": w.Conn().RemoteAddr()}).Info("KV config deleted")
	s.m.adminChanges.WithLabelValues(remoting.RequestName(req.Code)).Inc()
	reply(w, req, remoting.Success, "", nil)
}

// AppendKVTable writes RocketMQ's KVTable body, {"table":{"k":"v",...}} with sorted keys.
func AppendKVTable(dst []byte, table map[string]string) []byte {
	dst = append(dst, `{"table":`...)
	dst = route.AppendStringMap(dst, table)
	return append(dst, '}')
}

// DecodeKVTable parses a KVTable body.
func DecodeKVTable(data []byte) (map[string]string, error) {
	var t struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%w: KVTable: %v", ErrBadBody, err)
	}
	if t.Table == nil {
		t.Table = map[string]string{}
	}
	return t.Table, nil
}

func (s *Server) kvList(w remoting.ResponseWriter, req *remoting.Command) {
	ns := req.Ext("namespace")
	items, ok, err := s.kv.List(ns)
	if err != nil {
		reply(w, req, remoting.SystemError, err.Error(), nil)
		return
	}
	if !ok {
		reply(w, req, remoting.QueryNotFound, "No config item, Namespace: "+ns, nil)
		return
	}
	reply(w, req, remoting.Success, "", AppendKVTable(nil, items))
}

// namesrvConfig answers GET_NAMESRV_CONFIG: every key of the effective configuration as
// RocketMQ's properties text, sorted, secrets and passwords masked (props.Dump's rule).
func (s *Server) namesrvConfig(w remoting.ResponseWriter, req *remoting.Command) {
	cfg := s.cfg
	s.updates.mu.Lock()
	if s.updates.logLevel != "" {
		cfg.LogLevel = s.updates.logLevel
	}
	s.updates.mu.Unlock()
	dump := props.Dump(&cfg)
	var b strings.Builder
	for _, k := range sortedKeysOf(dump) {
		b.WriteString(k + "=" + dump[k] + "\n")
	}
	reply(w, req, remoting.Success, "", []byte(b.String()))
}

func (s *Server) queryDataVersion(w remoting.ResponseWriter, req *remoting.Command) {
	addr := req.Ext("brokerAddr")
	var v route.DataVersion
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &v); err != nil {
			reply(w, req, remoting.SystemError, "DataVersion body: "+err.Error(), nil)
			return
		}
	}
	s.overlay.mu.Lock()
	held, ok := s.overlay.versions[addr]
	s.overlay.mu.Unlock()
	resp := remoting.NewResponse(req, remoting.Success, "")
	resp.SetExt("changed", strconv.FormatBool(!ok || !held.version.Equal(v)))
	if ok {
		resp.Body = route.AppendDataVersion(nil, held.version)
	}
	_ = w.Write(resp)
}

// adminGuard authenticates adminWriteCodes when ACL is off: signed under acl.BrokerAccessKey
// with the registration secret, or (registrationAllowUnauthenticated) anyone.
type adminGuard struct {
	secret        *SecretAuthenticator // nil without a registration secret
	allowUnsigned bool
	onRefusal     func(req *remoting.Command, peer string, err error)
}

// Admit implements remoting.Guard.
func (g adminGuard) Admit(c *remoting.ServerConn, req *remoting.Command) *remoting.Command {
	if !adminWriteCodes[req.Code] {
		return nil
	}
	unsigned := req.Ext(acl.ExtSignature) == "" && req.Ext(acl.ExtAccessKey) == ""
	var err error
	switch {
	case unsigned && g.allowUnsigned:
		return nil
	case unsigned:
		err = fmt.Errorf("%w: %s changes routes or configuration: sign it with the registration secret (mqadmin -registrationSecretFile) or an ACL admin account", ErrUnauthenticated, remoting.RequestName(req.Code))
	case g.secret == nil:
		err = fmt.Errorf("%w: this name server has no registration secret to verify %s with", ErrUnauthenticated, remoting.RequestName(req.Code))
	default:
		err = g.secret.Authenticate(req, c.RemoteAddr())
	}
	if err == nil {
		return nil
	}
	if g.onRefusal != nil {
		g.onRefusal(req, c.RemoteAddr(), err)
	}
	return remoting.NewResponse(req, remoting.NoPermission, err.Error())
}

// adminRefused counts and logs (rate-limited) an admin request adminGuard refused.
func (s *Server) adminRefused(req *remoting.Command, peer string, err error) {
	name := remoting.RequestName(req.Code)
	s.m.adminRefused.WithLabelValues(name).Inc()
	if ok, suppressed := s.refusalLog.allow(s.cfg.Now()); ok {
		f := logrus.Fields{"peer": peer, "request": name}
		if suppressed > 0 {
			f["suppressed"] = suppressed
		}
		s.log.WithFields(f).WithError(err).Warn("admin request refused")
	}
}

// openKV is the KV store of a Server without Config.KVStore: kvConfigPath on the OS.
func openKV(cfg Config) (kvconfig.Store, error) {
	return kvconfig.OpenFile(cfg.KVFS, cfg.KVConfigPath, cfg.kvLimits())
}

// errKV reports a KV store that could not be opened.
var errKV = errors.New("nameserver: KV configuration")

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
