package broker

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rmqha/rmqha/libs/broker/brokerstats"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// newBrokerStats builds the stats items of RocketMQ's BrokerStatsManager from the broker keys
// (statsMaxKeys, maxStatsIdleTimeInMinutes).
func newBrokerStats(cfg Config) (*brokerstats.Manager, error) {
	sc := brokerstats.DefaultConfig()
	sc.ClusterName = cfg.BrokerClusterName
	sc.MaxKeys = cfg.StatsMaxKeys
	if idle := cfg.MaxStatsIdleTimeInMinutes; idle >= 0 {
		// RocketMQ 5 reads 0 to 10 minutes as 30: a key is never dropped between the
		// samples of its first minutes.
		if idle <= 10 {
			idle = 30
		}
		idle = min(idle, 1<<24) // 32 years: beyond, the duration would overflow
		sc.MaxIdle = time.Duration(idle) * time.Minute
	}
	sc.IsSystemTopic = func(topic string) bool {
		return meta.IsSystemTopic(topic, cfg.BrokerClusterName, cfg.BrokerName)
	}
	return brokerstats.New(sc)
}

// countPut counts a stored send of msgs messages (body bytes) into topic, the topic the client
// sent to (its dead-letter topic when redirected there; delayed, timer and transactional
// sends count at their send).
func (b *Broker) countPut(topic string, msgs, bytes int) {
	if b.noStats.Load() {
		return
	}
	b.bstats.Put(topic, int64(msgs), int64(bytes))
}

// countGet counts a pull's read: the messages found for its group, or a miss.
func (b *Broker) countGet(pr *pullRequest, code int32, res *commitlog.GetResult) {
	if b.noStats.Load() {
		return
	}
	if code != remoting.Success {
		b.bstats.Miss()
		return
	}
	n := 0
	for _, r := range res.Records {
		n += len(r)
	}
	b.bstats.Get(pr.topic, pr.group, int64(len(res.Records)), int64(n))
}

// handleViewBrokerStatsData answers VIEW_BROKER_STATS_DATA (statsName, statsKey) with
// BrokerStatsData, the item's last minute, hour and day, as RocketMQ's AdminBrokerProcessor;
// SYSTEM_ERROR "The stats <name> <key> not exist" for an item never counted here.
func (b *Broker) handleViewBrokerStatsData(w remoting.ResponseWriter, req *remoting.Command) {
	name, key := req.Ext("statsName"), req.Ext("statsKey")
	it, ok := b.bstats.Lookup(name, key)
	if !ok {
		b.reply(w, req, remoting.SystemError, fmt.Sprintf("The stats <%s> <%s> not exist", name, key))
		return
	}
	item := func(s brokerstats.Snapshot) route.BrokerStatsItem {
		return route.BrokerStatsItem{Sum: s.Sum, Tps: s.Tps, Avgpt: s.Avgpt}
	}
	b.replyOK(w, req, route.AppendBrokerStatsData(nil, route.BrokerStatsData{
		StatsMinute: item(it.Minute()), StatsHour: item(it.Hour()), StatsDay: item(it.Day()),
	}))
}

// statsRuntimeInfo adds RocketMQ's stats keys to GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus):
// the rates over 10 s, a minute and 10 min ("r10 r60 r600"; both spellings of
// getTransferredTps, 4.9's and 5's) and the message totals without system topics, now and at
// the start of today and yesterday.
func (b *Broker) statsRuntimeInfo(t map[string]string) {
	r := b.bstats.Rates()
	t["putTps"] = r.PutTps
	t["getFoundTps"] = r.GetFoundTps
	t["getMissTps"] = r.GetMissTps
	t["getTotalTps"] = r.GetTotalTps
	t["getTransferedTps"] = r.GetTransferredTps
	t["getTransferredTps"] = r.GetTransferredTps
	put, get := b.bstats.Totals()
	m := b.bstats.Mornings()
	for k, v := range map[string]int64{
		"msgPutTotalTodayNow": put, "msgPutTotalTodayMorning": m.PutToday, "msgPutTotalYesterdayMorning": m.PutYesterday,
		"msgGetTotalTodayNow": get, "msgGetTotalTodayMorning": m.GetToday, "msgGetTotalYesterdayMorning": m.GetYesterday,
	} {
		t[k] = strconv.FormatInt(v, 10)
	}
}
