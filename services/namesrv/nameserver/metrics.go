package nameserver

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rmqha/rmqha/libs/obs"
)

// metrics are the name server's Prometheus series.
type metrics struct {
	reg           *prometheus.Registry
	routeLookups  *prometheus.CounterVec
	routeLatency  prometheus.Histogram
	registrations *prometheus.CounterVec
	removals      *prometheus.CounterVec
	refusals      *prometheus.CounterVec
	adminChanges  *prometheus.CounterVec
	adminRefused  *prometheus.CounterVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: obs.NewRegistry(),
		routeLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rmqha_namesrv_route_lookups_total", Help: "GET_ROUTEINFO_BY_TOPIC requests by result (found, not_found).",
		}, []string{"result"}),
		routeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rmqha_namesrv_route_lookup_seconds", Help: "Time to answer a route lookup from the registry.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10),
		}),
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rmqha_namesrv_registrations_total", Help: "REGISTER_BROKER requests by result (ok, refused, invalid).",
		}, []string{"result"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rmqha_namesrv_registration_refusals_total",
			Help: "REGISTER_BROKER / UNREGISTER_BROKER requests refused, by request (register, unregister) and reason " +
				"(unsigned, unauthenticated, unbound, clock_skew, replayed, too_many_brokers, invalid, limit, not_owner, not_leader, conflict).",
		}, []string{"request", "reason"}),
		adminChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rmqha_namesrv_admin_changes_total", Help: "Admin changes applied, by request (WIPE_WRITE_PERM_OF_BROKER, ADD_WRITE_PERM_OF_BROKER, DELETE_TOPIC_IN_NAMESRV, PUT_KV_CONFIG, DELETE_KV_CONFIG, UPDATE_NAMESRV_CONFIG).",
		}, []string{"request"}),
		adminRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rmqha_namesrv_admin_refusals_total", Help: "Admin requests refused NO_PERMISSION with ACL off (unsigned, or not signed with the registration secret), by request.",
		}, []string{"request"}),
		removals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rmqha_namesrv_broker_removals_total", Help: "Brokers removed from routes by cause (connection_closed, expired, unregistered).",
		}, []string{"cause"}),
	}
	m.reg.MustRegister(obs.RemotingCollector("rmqha_namesrv_remoting_", s.rpc.Stats))
	m.reg.MustRegister(m.routeLookups, m.routeLatency, m.registrations, m.removals, m.refusals, m.adminChanges, m.adminRefused,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rmqha_namesrv_brokers", Help: "Live brokers in the registry."},
			func() float64 { return float64(len(s.reg.Status().Brokers)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rmqha_namesrv_registry_stale", Help: "1 while the registry cannot confirm its state (Consul unreachable)."},
			func() float64 {
				if s.reg.Status().Stale {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "rmqha_namesrv_conflicts", Help: "Registration conflicts remembered (two masters, one name in two clusters)."},
			func() float64 { return float64(len(s.reg.Status().Conflicts)) }),
	)
	return m
}
