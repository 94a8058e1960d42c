package acl

import "github.com/prometheus/client_golang/prometheus"

// Collector returns the guard's Prometheus series, read at scrape time, each name prefixed
// with prefix (e.g. "rmqha_broker_"):
//
//	acl_requests_total{result="allowed|denied",reason}   decisions by Reason
//	acl_reloads_total{result="ok|error"}                 file versions applied / refused
//	acl_last_reload_ok                                   0 while the newest version did not load
//	acl_accounts                                         accounts in the table in use
//	acl_loaded_timestamp_seconds                         when the table in use was loaded
func (g *Guard) Collector(prefix string) prometheus.Collector {
	return &collector{g: g,
		requests: prometheus.NewDesc(prefix+"acl_requests_total", "ACL decisions by result and reason (global_white_address, white_address, signed; no_access_key, unknown_access_key, bad_signature, admin_required, no_permission, bad_request).", []string{"result", "reason"}, nil),
		reloads:  prometheus.NewDesc(prefix+"acl_reloads_total", "plain_acl.yml versions applied (ok) or refused (error: unreadable or invalid; the last good table keeps serving).", []string{"result"}, nil),
		lastOK:   prometheus.NewDesc(prefix+"acl_last_reload_ok", "1 when the newest version of plain_acl.yml is the one in use, 0 while it does not load.", nil, nil),
		accounts: prometheus.NewDesc(prefix+"acl_accounts", "Accounts in the ACL table in use.", nil, nil),
		loadedAt: prometheus.NewDesc(prefix+"acl_loaded_timestamp_seconds", "When the ACL table in use was loaded (Unix time).", nil, nil),
	}
}

type collector struct {
	g                                             *Guard
	requests, reloads, lastOK, accounts, loadedAt *prometheus.Desc
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.reloads
	ch <- c.lastOK
	ch <- c.accounts
	ch <- c.loadedAt
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	g := c.g
	for r := Reason(0); r < numReasons; r++ {
		result := "denied"
		if r.Allowed() {
			result = "allowed"
		}
		ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(g.decisions[r].Load()), result, r.String())
	}
	ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(g.reloadsOK.Load()), "ok")
	ch <- prometheus.MustNewConstMetric(c.reloads, prometheus.CounterValue, float64(g.reloadErr.Load()), "error")
	ok := 0.0
	if g.lastOK.Load() {
		ok = 1
	}
	ch <- prometheus.MustNewConstMetric(c.lastOK, prometheus.GaugeValue, ok)
	ch <- prometheus.MustNewConstMetric(c.accounts, prometheus.GaugeValue, float64(len(g.Table().order)))
	ch <- prometheus.MustNewConstMetric(c.loadedAt, prometheus.GaugeValue, float64(g.loadedAt.Load())/1e9)
}
