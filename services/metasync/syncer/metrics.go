package syncer

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rmqha/rmqha/libs/obs"
)

// statusCollector exports Status at scrape time: nothing is counted on the
// sync path itself.
type statusCollector struct{ s *Service }

var (
	descNATS    = prometheus.NewDesc("rmqha_metasync_nats_connected", "1 while announcements can be published.", nil, nil)
	descOwned   = prometheus.NewDesc("rmqha_metasync_group_owned", "1 when this instance syncs the broker group (holds its lock, or runs without Consul).", []string{"cluster", "broker"}, nil)
	descVersion = prometheus.NewDesc("rmqha_metasync_table_version", "Counter part of a table's DataVersion, at the master (last pull), at metasync (stored snapshot) and at each reporting slave.", []string{"cluster", "broker", "table", "holder"}, nil)
	descAge     = prometheus.NewDesc("rmqha_metasync_last_sync_age_seconds", "Age of the last successful pull of a table from its master.", []string{"cluster", "broker", "table"}, nil)
	descSlave   = prometheus.NewDesc("rmqha_metasync_slave_sync_age_seconds", "Age of a slave's last successful sync of a table, as the slave reported it.", []string{"cluster", "broker", "table", "slave_id"}, nil)
	descAnnounc = prometheus.NewDesc("rmqha_metasync_announcements_total", "Announcements published for a table.", []string{"cluster", "broker", "table"}, nil)
)

func (c statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descNATS, descOwned, descVersion, descAge, descSlave, descAnnounc} {
		ch <- d
	}
}

func (c statusCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Status()
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	ch <- prometheus.MustNewConstMetric(descNATS, prometheus.GaugeValue, b2f(st.NATSConnected))
	for _, g := range st.Groups {
		ch <- prometheus.MustNewConstMetric(descOwned, prometheus.GaugeValue, b2f(g.Owned), g.Cluster, g.BrokerName)
		for _, t := range g.Tables {
			tbl := string(t.Table)
			if t.MasterVersion != nil {
				ch <- prometheus.MustNewConstMetric(descVersion, prometheus.GaugeValue, float64(t.MasterVersion.Counter), g.Cluster, g.BrokerName, tbl, "master")
			}
			if t.MetasyncVersion != nil {
				ch <- prometheus.MustNewConstMetric(descVersion, prometheus.GaugeValue, float64(t.MetasyncVersion.Counter), g.Cluster, g.BrokerName, tbl, "metasync")
			}
			if t.LastSuccessAgeMillis >= 0 {
				ch <- prometheus.MustNewConstMetric(descAge, prometheus.GaugeValue, float64(t.LastSuccessAgeMillis)/1000, g.Cluster, g.BrokerName, tbl)
			}
			ch <- prometheus.MustNewConstMetric(descAnnounc, prometheus.CounterValue, float64(t.Announced), g.Cluster, g.BrokerName, tbl)
			for _, sl := range t.Slaves {
				id := strconv.FormatInt(sl.BrokerID, 10)
				ch <- prometheus.MustNewConstMetric(descVersion, prometheus.GaugeValue, float64(sl.DataVersion.Counter), g.Cluster, g.BrokerName, tbl, "slave-"+id)
				if sl.LastSyncAgeMillis >= 0 {
					ch <- prometheus.MustNewConstMetric(descSlave, prometheus.GaugeValue, float64(sl.LastSyncAgeMillis)/1000, g.Cluster, g.BrokerName, tbl, id)
				}
			}
		}
	}
}

// newMetricsRegistry returns the registry behind /metrics.
func newMetricsRegistry(s *Service) *prometheus.Registry {
	reg := obs.NewRegistry()
	reg.MustRegister(statusCollector{s})
	return reg
}
