package nameserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/obs"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/rmqha/rmqha/libs/tlsconf"
	"github.com/rmqha/rmqha/services/namesrv/kvconfig"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/sirupsen/logrus"
)

// Server is a running name server.
type Server struct {
	cfg  Config
	log  logrus.FieldLogger
	reg  registry.Registry
	rpc  *remoting.Server
	acl  *acl.Guard // nil unless aclEnable
	http *http.Server
	hln  net.Listener

	m   *metrics
	tls *tlsconf.Server // nil when neither the remoting nor the status port uses TLS

	auth       Authenticator // nil: no credential to verify signed registrations with
	lim        registry.Limits
	fresh      *freshness
	refusalLog *logLimiter
	overlay    *routeOverlay  // this name server's admin changes to routes (admin.go)
	kv         kvconfig.Store // the KV configuration
	updates    configUpdates  // UPDATE_NAMESRV_CONFIG (config_update.go)

	stop chan struct{}
	wg   sync.WaitGroup
}

// New builds a name server over reg; Start listens.
func New(cfg Config, reg registry.Registry) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		l := logrus.New()
		l.SetLevel(logrus.PanicLevel)
		cfg.Logger = l
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tlsSrv, err := resolveTLS(&cfg)
	if err != nil {
		return nil, err
	}
	rc := remoting.DefaultServerConfig()
	rc.Addr = net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.ListenPort))
	rc.MaxFrameSize = cfg.MaxFrameSize
	rc.Logger = cfg.Logger
	cfg.ServerKeys.Apply(&rc)
	rc.TLSMode = remoting.TLSMode(cfg.TLSServerMode)
	if cfg.TLSServerMode != tlsconf.ModeDisabled {
		rc.TLS = tlsSrv.Config
	}
	var s *Server
	guard, ag, err := buildGuards(cfg, func(req *remoting.Command, peer string, err error) {
		if s != nil {
			s.adminRefused(req, peer, err)
		}
	})
	if err != nil {
		return nil, err
	}
	rc.Guard = guard
	rpc, err := remoting.NewServer(rc)
	if err != nil {
		return nil, err
	}
	s = &Server{cfg: cfg, log: cfg.Logger, reg: reg, rpc: rpc, tls: tlsSrv, acl: ag, stop: make(chan struct{}), lim: cfg.Limits(),
		fresh: newFreshness(cfg.RegistrationMaxClockSkew), refusalLog: &logLimiter{interval: 10 * time.Second, burst: 10},
		auth: cfg.Authenticator, overlay: newRouteOverlay(), kv: cfg.KVStore}
	if s.kv == nil {
		if cfg.KVFS == nil {
			cfg.KVFS = vfs.Default
		}
		if s.kv, err = openKV(cfg); err != nil {
			return nil, fmt.Errorf("%w: %w", errKV, err)
		}
	}
	if s.auth == nil {
		secret, err := cfg.registrationSecret()
		if err != nil {
			return nil, err
		}
		var sa *SecretAuthenticator
		if secret != "" {
			if sa, err = NewSecretAuthenticator(secret); err != nil {
				return nil, err
			}
		}
		if sa != nil || ag != nil {
			s.auth = registrationAuth{secret: sa, aclChecked: ag != nil}
		}
	}
	s.m = newMetrics(s)
	if ag != nil {
		s.m.reg.MustRegister(ag.Collector("rmqha_namesrv_"))
	}
	rpc.HandleFunc(remoting.RegisterBroker, s.registerBroker)
	rpc.HandleFunc(remoting.UnregisterBroker, s.unregisterBroker)
	rpc.HandleFunc(remoting.GetRouteInfoByTopic, s.routeByTopic)
	rpc.HandleFunc(remoting.GetBrokerClusterInfo, s.clusterInfo)
	rpc.HandleFunc(remoting.GetAllTopicListFromNameServer, s.topicList)
	rpc.HandleFunc(remoting.WipeWritePermOfBroker, s.wipeWritePerm)
	rpc.HandleFunc(remoting.AddWritePermOfBroker, s.addWritePerm)
	rpc.HandleFunc(remoting.DeleteTopicInNameSrv, s.deleteTopic)
	rpc.HandleFunc(remoting.GetTopicsByCluster, s.topicsByCluster)
	rpc.HandleFunc(remoting.GetSystemTopicListFromNS, s.systemTopicList)
	rpc.HandleFunc(remoting.GetUnitTopicList, s.unitTopics(func(f int32) bool { return f&topicSysFlagUnit != 0 }))
	rpc.HandleFunc(remoting.GetHasUnitSubTopicList, s.unitTopics(func(f int32) bool { return f&topicSysFlagUnitSub != 0 }))
	rpc.HandleFunc(remoting.GetHasUnitSubUnUnitTopicList, s.unitTopics(func(f int32) bool {
		return f&topicSysFlagUnit == 0 && f&topicSysFlagUnitSub != 0
	}))
	rpc.HandleFunc(remoting.PutKVConfig, s.putKVConfig)
	rpc.HandleFunc(remoting.GetKVConfig, s.getKVConfig)
	rpc.HandleFunc(remoting.DeleteKVConfig, s.deleteKVConfig)
	rpc.HandleFunc(remoting.GetKVListByNamespace, s.kvList)
	rpc.HandleFunc(remoting.GetNamesrvConfig, s.namesrvConfig)
	rpc.HandleFunc(remoting.UpdateNamesrvConfig, s.updateNamesrvConfig)
	rpc.HandleFunc(remoting.QueryDataVersion, s.queryDataVersion)
	rpc.OnConnClose(func(c *remoting.ServerConn) {
		if gone := reg.DropConn(c.ID()); len(gone) > 0 {
			s.m.removals.WithLabelValues("connection_closed").Add(float64(len(gone)))
			s.log.WithFields(logrus.Fields{"peer": c.RemoteAddr(), "brokers": gone}).Info("broker connection closed: brokers removed from routes")
		}
	})
	return s, nil
}

// resolveTLS applies tls.config.file to cfg and builds the server certificate when a port
// needs it, logging what the ports will speak.
func resolveTLS(cfg *Config) (*tlsconf.Server, error) {
	applied, err := cfg.Config.ApplyFile()
	if err != nil {
		return nil, fmt.Errorf("nameserver: %w", err)
	}
	if err := cfg.Config.Validate(); err != nil {
		return nil, fmt.Errorf("nameserver: %w", err)
	}
	var srv *tlsconf.Server
	if cfg.TLSServerMode != tlsconf.ModeDisabled || cfg.HTTPTLSEnable {
		if srv, err = cfg.Config.BuildServer(); err != nil {
			return nil, fmt.Errorf("nameserver: %w", err)
		}
	}
	f := logrus.Fields{"tls.server.mode": cfg.TLSServerMode, "httpTlsEnable": cfg.HTTPTLSEnable}
	if len(applied) > 0 {
		f["tls.config.file"], f["fromFile"] = cfg.TLSConfigFile, applied
	}
	if srv != nil {
		f["tls.server.need.client.auth"], f["selfSigned"] = cfg.TLSServerNeedClientAuth, srv.SelfSigned
	}
	cfg.Logger.WithFields(f).Info("remoting TLS")
	if srv != nil && srv.SelfSigned {
		cfg.Logger.Warn("TLS: serving a self-signed certificate generated at start (tls.test.mode.enable=true and no tls.server.certPath); clients that verify servers will refuse it")
	}
	return srv, nil
}

// Start listens on the remoting (and HTTP) ports and starts the expiry scan.
func (s *Server) Start() error {
	if s.cfg.RegistrationAllowUnauthenticated {
		s.log.WithField("key", "registrationAllowUnauthenticated").Warn("registrationAllowUnauthenticated=true: anyone who reaches this port can register brokers " +
			"(unsigned registrations are admitted; their epochs are ignored and they cannot change what another connection registered)")
	}
	if err := s.rpc.Start(); err != nil {
		return err
	}
	if s.acl != nil {
		s.acl.Start()
	}
	if s.cfg.HTTPPort > 0 {
		var tc *tls.Config
		if s.cfg.HTTPTLSEnable {
			tc = s.tls.HTTP()
		}
		ln, err := obs.Listen(net.JoinHostPort(s.cfg.BindAddress, strconv.Itoa(s.cfg.HTTPPort)), tc)
		if err != nil {
			s.rpc.Close()
			return fmt.Errorf("nameserver: http: %w", err)
		}
		s.hln = ln
		mux := obs.Mux(obs.Endpoints{Health: s.Health, Status: func() any { return s.Status() }, Metrics: s.m.reg, Pprof: s.cfg.HTTPPprofEnable})
		if s.cfg.HTTPPprofEnable {
			s.log.WithFields(logrus.Fields{"key": "httpPprofEnable", "addr": ln.Addr().String()}).
				Warn("httpPprofEnable=true: profiling endpoints (/debug/pprof/) are exposed on the status port")
		}
		s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go s.http.Serve(ln)
	}
	s.wg.Add(1)
	go s.scan()
	return nil
}

// Addr is the remoting listen address.
func (s *Server) Addr() net.Addr { return s.rpc.Addr() }

// Close stops serving.
func (s *Server) Close() error {
	// Connections we close on the way out must not look like dead brokers.
	if pc, ok := s.reg.(interface{ PrepareClose() }); ok {
		pc.PrepareClose()
	}
	close(s.stop)
	s.wg.Wait()
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.http.Shutdown(ctx)
		cancel()
	}
	err := s.rpc.Close()
	if s.acl != nil {
		s.acl.Close()
	}
	return errors.Join(err, s.reg.Close())
}

func (s *Server) scan() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ScanNotActiveBrokerInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if gone := s.reg.Expire(s.cfg.Now(), s.cfg.BrokerExpire); len(gone) > 0 {
				s.m.removals.WithLabelValues("expired").Add(float64(len(gone)))
				s.log.WithField("brokers", gone).Warn("brokers stopped registering: removed from routes")
			}
		}
	}
}

func reply(w remoting.ResponseWriter, req *remoting.Command, code int32, remark string, body []byte) {
	resp := remoting.NewResponse(req, code, remark)
	resp.Body = body
	_ = w.Write(resp)
}

// Refusal reasons (the reason label of rmqha_namesrv_registration_refusals_total).
const (
	reasonUnsigned        = "unsigned"        // no signature and unauthenticated registrations not admitted
	reasonUnauthenticated = "unauthenticated" // the signature does not verify
	reasonUnbound         = "unbound"         // registrationTime / registrationDigest missing or not matching
	reasonClockSkew       = "clock_skew"
	reasonReplayed        = "replayed"
	reasonTooMany         = "too_many_brokers"
	reasonInvalid         = "invalid"
	reasonLimit           = "limit"
	reasonNotOwner        = "not_owner"
	reasonNotLeader       = "not_leader"
	reasonConflict        = "conflict"
)

// refuse answers a refused registration or unregistration, counts it, and logs it with the
// peer's address (rate-limited).
func (s *Server) refuse(w remoting.ResponseWriter, req *remoting.Command, request, reason string, code int32, err error) {
	s.m.refusals.WithLabelValues(request, reason).Inc()
	if request == "register" {
		s.m.registrations.WithLabelValues("refused").Inc()
	}
	if ok, suppressed := s.refusalLog.allow(s.cfg.Now()); ok {
		f := logrus.Fields{"peer": w.Conn().RemoteAddr(), "request": request, "reason": reason,
			"cluster": short(req.Ext("clusterName")), "broker": short(req.Ext("brokerName")),
			"brokerId": short(req.Ext("brokerId")), "addr": short(req.Ext("brokerAddr"))}
		if suppressed > 0 {
			f["suppressed"] = suppressed
		}
		s.log.WithFields(f).WithError(err).Warn("broker registration refused")
	}
	reply(w, req, code, err.Error(), nil)
}

// short bounds a logged value that came from the network.
func short(v string) string {
	if len(v) > 64 {
		return v[:64] + "..."
	}
	return v
}

// registryRefusal maps a registry error to a reason and a response code.
func registryRefusal(err error) (string, int32) {
	switch {
	case errors.Is(err, registry.ErrNotOwner):
		return reasonNotOwner, remoting.NoPermission
	case errors.Is(err, registry.ErrNotLeader):
		return reasonNotLeader, remoting.NoPermission
	case errors.Is(err, registry.ErrLimit):
		return reasonLimit, remoting.SystemError
	case errors.Is(err, registry.ErrInvalid):
		return reasonInvalid, remoting.SystemError
	}
	return reasonConflict, remoting.SystemError
}

// authenticate judges who sent a REGISTER_BROKER or UNREGISTER_BROKER. A signed request
// must verify (the Authenticator), carry a registrationTime and registrationDigest that
// match it, and be fresh: within the clock-skew window and after the last one of the same
// broker. An unsigned one is admitted as unauthenticated only with
// registrationAllowUnauthenticated. cluster, name and addr have been checked against the
// limits (they key the replay window).
func (s *Server) authenticate(req *remoting.Command, peer, cluster, name, addr string) (bool, string, error) {
	if req.Ext(acl.ExtSignature) == "" && req.Ext(acl.ExtAccessKey) == "" {
		if s.cfg.RegistrationAllowUnauthenticated {
			return false, "", nil
		}
		return false, reasonUnsigned, fmt.Errorf("%w: the request is not signed; set registrationSecret (or registrationSecretFile) on the broker to the name server's", ErrUnauthenticated)
	}
	if s.auth == nil {
		if s.cfg.RegistrationAllowUnauthenticated {
			return false, "", nil // nothing to verify with: taken as unsigned
		}
		return false, reasonUnauthenticated, fmt.Errorf("%w: this name server has no registration credential", ErrUnauthenticated)
	}
	if err := s.auth.Authenticate(req, peer); err != nil {
		return false, reasonUnauthenticated, err
	}
	ts, err := acl.CheckRegistration(req)
	if err != nil {
		return false, reasonUnbound, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	if err := s.fresh.admit(brokerKey(cluster, name, addr), ts, s.cfg.Now()); err != nil {
		switch {
		case errors.Is(err, ErrClockSkew):
			return false, reasonClockSkew, err
		case errors.Is(err, ErrReplayed):
			return false, reasonReplayed, err
		}
		return false, reasonTooMany, err
	}
	return true, "", nil
}

func (s *Server) registerBroker(w remoting.ResponseWriter, req *remoting.Command) {
	const request = "register"
	id, err := req.ExtInt64In("brokerId", 0, math.MaxInt64)
	if err != nil {
		s.refuse(w, req, request, reasonInvalid, remoting.SystemError, fmt.Errorf("brokerId: %w", err))
		return
	}
	if err := s.lim.CheckBodySize(len(req.Body)); err != nil {
		s.refuse(w, req, request, reasonLimit, remoting.SystemError, err)
		return
	}
	cluster, name, addr := req.Ext("clusterName"), req.Ext("brokerName"), req.Ext("brokerAddr")
	if err := s.checkIdentity(cluster, name, addr); err != nil {
		reason, code := registryRefusal(err)
		s.refuse(w, req, request, reason, code, err)
		return
	}
	authenticated, reason, err := s.authenticate(req, w.Conn().RemoteAddr(), cluster, name, addr)
	if err != nil {
		s.refuse(w, req, request, reason, remoting.NoPermission, err)
		return
	}
	if req.Ext("compressed") == "true" {
		reply(w, req, remoting.SystemError, "compressed registration bodies are not supported; set compressedRegister=false", nil)
		return
	}
	if crc := req.Ext("bodyCrc32"); crc != "" && crc != "0" {
		// An Integer in Java's header: a value beyond 32 bits is refused, never wrapped.
		n, err := req.ExtInt32("bodyCrc32")
		if err != nil {
			reply(w, req, remoting.SystemError, "bodyCrc32: "+err.Error(), nil)
			return
		}
		if err := route.CheckBodyCRC32(req.Body, n); err != nil {
			reply(w, req, remoting.SystemError, "crc32 not match", nil)
			return
		}
	}
	var body route.RegisterBrokerBody
	if len(req.Body) > 0 {
		if body, err = route.DecodeRegisterBrokerBody(req.Body); err != nil {
			reply(w, req, remoting.SystemError, "register body: "+err.Error(), nil)
			return
		}
	}
	var epoch int64
	if req.Ext("epoch") != "" {
		if epoch, err = req.ExtInt64In("epoch", 0, math.MaxInt64); err != nil {
			reply(w, req, remoting.SystemError, "epoch: "+err.Error(), nil)
			return
		}
	}
	r := registry.Registration{
		Cluster: cluster, BrokerName: name, BrokerID: id,
		Addr: addr, HAAddr: req.Ext("haServerAddr"), HTTPAddr: req.Ext("httpAddr"), HTTPTLS: req.Ext("httpTls") == "true", Epoch: epoch,
		Topics: body.TopicConfigSerializeWrapper, ConnID: w.Conn().ID(), Authenticated: authenticated,
	}
	res, err := s.reg.Register(r, s.cfg.Now())
	if err != nil {
		reason, code := registryRefusal(err)
		s.refuse(w, req, request, reason, code, err)
		return
	}
	s.m.registrations.WithLabelValues("ok").Inc()
	s.overlay.registered(r)
	resp := remoting.NewResponse(req, remoting.Success, "")
	if res.MasterAddr != "" {
		resp.SetExt("masterAddr", res.MasterAddr).SetExt("haServerAddr", res.MasterHAAddr)
	}
	_ = w.Write(resp)
}

// checkIdentity bounds the fields that name a broker before anything is recorded about it.
func (s *Server) checkIdentity(cluster, name, addr string) error {
	if err := registry.CheckNames(cluster, name, s.lim); err != nil {
		return err
	}
	if addr == "" {
		return fmt.Errorf("%w: brokerAddr is empty", registry.ErrInvalid)
	}
	return registry.CheckAddr("brokerAddr", addr)
}

func (s *Server) unregisterBroker(w remoting.ResponseWriter, req *remoting.Command) {
	const request = "unregister"
	id, err := req.ExtInt64In("brokerId", 0, math.MaxInt64)
	if err != nil {
		s.refuse(w, req, request, reasonInvalid, remoting.SystemError, fmt.Errorf("brokerId: %w", err))
		return
	}
	cluster, name, addr := req.Ext("clusterName"), req.Ext("brokerName"), req.Ext("brokerAddr")
	if err := s.checkIdentity(cluster, name, addr); err != nil {
		reason, code := registryRefusal(err)
		s.refuse(w, req, request, reason, code, err)
		return
	}
	if _, reason, err := s.authenticate(req, w.Conn().RemoteAddr(), cluster, name, addr); err != nil {
		s.refuse(w, req, request, reason, remoting.NoPermission, err)
		return
	}
	if err := s.reg.Unregister(cluster, name, id, addr, w.Conn().ID()); err != nil {
		reason, code := registryRefusal(err)
		s.refuse(w, req, request, reason, code, err)
		return
	}
	s.m.removals.WithLabelValues("unregistered").Inc()
	s.log.WithFields(logrus.Fields{"broker": name, "brokerId": id, "addr": addr}).Info("broker unregistered")
	reply(w, req, remoting.Success, "", nil)
}

func (s *Server) routeByTopic(w remoting.ResponseWriter, req *remoting.Command) {
	topic := req.Ext("topic")
	start := time.Now()
	rd, ok := s.route(topic)
	s.m.routeLatency.Observe(time.Since(start).Seconds())
	if !ok {
		s.m.routeLookups.WithLabelValues("not_found").Inc()
		reply(w, req, remoting.TopicNotExist, "No topic route info in name server for the topic: "+topic, nil)
		return
	}
	s.m.routeLookups.WithLabelValues("found").Inc()
	reply(w, req, remoting.Success, "", route.AppendTopicRouteData(nil, rd))
}

func (s *Server) clusterInfo(w remoting.ResponseWriter, req *remoting.Command) {
	reply(w, req, remoting.Success, "", route.AppendClusterInfo(nil, s.reg.ClusterInfo()))
}

func (s *Server) topicList(w remoting.ResponseWriter, req *remoting.Command) {
	body, _ := json.Marshal(map[string][]string{"topicList": s.topics()})
	reply(w, req, remoting.Success, "", body)
}

// Health is nil while the name server can answer from fresh state.
func (s *Server) Health() error {
	if st := s.reg.Status(); st.Stale {
		return fmt.Errorf("registry state may be stale: %s", st.StaleWhy)
	}
	return nil
}

// StatusView is the /status document.
type StatusView struct {
	Role     string            `json:"role"`
	Addr     string            `json:"addr"`
	Registry registry.Status   `json:"registry"`
	Clusters route.ClusterInfo `json:"clusters"`
}

// Status reports the registry's view of the cluster and whether it is fresh.
func (s *Server) Status() StatusView {
	return StatusView{Role: "namesrv", Addr: s.Addr().String(), Registry: s.reg.Status(), Clusters: s.reg.ClusterInfo()}
}
