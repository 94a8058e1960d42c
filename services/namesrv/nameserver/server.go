package nameserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/broker/route"
	"github.com/rmqha/rmqha/libs/obs"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/sirupsen/logrus"
)

// Server is a running name server.
type Server struct {
	cfg  Config
	log  logrus.FieldLogger
	reg  registry.Registry
	rpc  *remoting.Server
	http *http.Server
	hln  net.Listener

	m *metrics

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
	rc := remoting.DefaultServerConfig()
	rc.Addr = net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.ListenPort))
	rc.MaxFrameSize = cfg.MaxFrameSize
	rc.Logger = cfg.Logger
	rpc, err := remoting.NewServer(rc)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, reg: reg, rpc: rpc, stop: make(chan struct{})}
	s.m = newMetrics(s)
	rpc.HandleFunc(remoting.RegisterBroker, s.registerBroker)
	rpc.HandleFunc(remoting.UnregisterBroker, s.unregisterBroker)
	rpc.HandleFunc(remoting.GetRouteInfoByTopic, s.routeByTopic)
	rpc.HandleFunc(remoting.GetBrokerClusterInfo, s.clusterInfo)
	rpc.HandleFunc(remoting.GetAllTopicListFromNameServer, s.topicList)
	rpc.OnConnClose(func(c *remoting.ServerConn) {
		if gone := reg.DropConn(c.ID()); len(gone) > 0 {
			s.m.removals.WithLabelValues("connection_closed").Add(float64(len(gone)))
			s.log.WithFields(logrus.Fields{"peer": c.RemoteAddr(), "brokers": gone}).Info("broker connection closed: brokers removed from routes")
		}
	})
	return s, nil
}

// Start listens on the remoting (and HTTP) ports and starts the expiry scan.
func (s *Server) Start() error {
	if err := s.rpc.Start(); err != nil {
		return err
	}
	if s.cfg.HTTPPort > 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.BindAddress, strconv.Itoa(s.cfg.HTTPPort)))
		if err != nil {
			s.rpc.Close()
			return fmt.Errorf("nameserver: http: %w", err)
		}
		s.hln = ln
		mux := obs.Mux(obs.Endpoints{Health: s.Health, Status: func() any { return s.Status() }, Metrics: s.m.reg})
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

func (s *Server) registerBroker(w remoting.ResponseWriter, req *remoting.Command) {
	id, err := req.ExtInt64In("brokerId", 0, math.MaxInt64)
	if err != nil {
		reply(w, req, remoting.SystemError, "brokerId: "+err.Error(), nil)
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
		Cluster: req.Ext("clusterName"), BrokerName: req.Ext("brokerName"), BrokerID: id,
		Addr: req.Ext("brokerAddr"), HAAddr: req.Ext("haServerAddr"), HTTPAddr: req.Ext("httpAddr"), Epoch: epoch,
		Topics: body.TopicConfigSerializeWrapper, ConnID: w.Conn().ID(),
	}
	res, err := s.reg.Register(r, s.cfg.Now())
	if err != nil {
		s.m.registrations.WithLabelValues("refused").Inc()
		s.log.WithFields(logrus.Fields{"cluster": r.Cluster, "broker": r.BrokerName, "brokerId": r.BrokerID, "addr": r.Addr, "epoch": r.Epoch}).
			WithError(err).Warn("registration refused")
		reply(w, req, remoting.SystemError, err.Error(), nil)
		return
	}
	s.m.registrations.WithLabelValues("ok").Inc()
	resp := remoting.NewResponse(req, remoting.Success, "")
	if res.MasterAddr != "" {
		resp.SetExt("masterAddr", res.MasterAddr).SetExt("haServerAddr", res.MasterHAAddr)
	}
	_ = w.Write(resp)
}

func (s *Server) unregisterBroker(w remoting.ResponseWriter, req *remoting.Command) {
	id, err := req.ExtInt64In("brokerId", 0, math.MaxInt64)
	if err != nil {
		reply(w, req, remoting.SystemError, "brokerId: "+err.Error(), nil)
		return
	}
	_ = s.reg.Unregister(req.Ext("clusterName"), req.Ext("brokerName"), id, req.Ext("brokerAddr"))
	s.m.removals.WithLabelValues("unregistered").Inc()
	s.log.WithFields(logrus.Fields{"broker": req.Ext("brokerName"), "brokerId": id, "addr": req.Ext("brokerAddr")}).Info("broker unregistered")
	reply(w, req, remoting.Success, "", nil)
}

func (s *Server) routeByTopic(w remoting.ResponseWriter, req *remoting.Command) {
	topic := req.Ext("topic")
	start := time.Now()
	rd, ok := s.reg.Route(topic)
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
	body, _ := json.Marshal(map[string][]string{"topicList": s.reg.Topics()})
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
