package broker

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rmqha/rmqha/libs/broker/clients"
	"github.com/rmqha/rmqha/libs/filter"
	"github.com/rmqha/rmqha/libs/remoting"
)

// SQL92 property filtering (enablePropertyFilter), as RocketMQ's PullMessageProcessor and
// ExpressionMessageFilter do it:
//
//   - a subscription is a tag subscription when its expressionType is "" or "TAG"; anything
//     else is compiled with package filter (clients.FilterCache, shared by heartbeats and
//     pulls);
//   - a pull with the subscription bit carries its own selector: one that does not compile is
//     SUBSCRIPTION_PARSE_FAILED (23) with the parse error;
//   - a pull without it uses the group's heartbeat subscription: one whose selector did not
//     compile is FILTER_DATA_NOT_EXIST (27), RocketMQ's answer when it has no filter data for
//     the group (its heartbeat was kept);
//   - then, with enablePropertyFilter=false, a non-TAG subscription is SYSTEM_ERROR (1)
//     "The broker does not support consumer to filter message by SQL92" (the same answer to
//     CHECK_CLIENT_CONFIG); heartbeats are never refused for it;
//   - per message the store evaluates the selector against the record's properties
//     (commitlog.Filter.Properties, after the tag stage), so pull limits count delivered
//     messages only; a batch filtered out whole is PULL_RETRY_IMMEDIATELY with the offset past
//     it. Only TRUE delivers: FALSE, NULL (a missing property) and an evaluation error do not;
//   - a retry topic (%RETRY%group) is delivered unfiltered unless filterSupportRetry is on:
//     then each retried message is evaluated against the group's selector for the topic it
//     came from (its RETRY_TOPIC property). RocketMQ applies that only when the retry topic's
//     own subscription is non-TAG, which no client sends (Java and Go subscribe to it with
//     "*"), so here it applies whenever the group has a selector for the original topic.
//
// The same holds on a slave serving pulls: it has the subscriptions from the heartbeats
// clients send to every broker address.

// noFilterDataRemark and unsupportedFilterRemark are RocketMQ's remarks.
const (
	noFilterDataRemark      = "The broker's consumer filter data is not exist!Your expression may be wrong!"
	unsupportedFilterRemark = "The broker does not support consumer to filter message by "
)

// selectorStats counts SQL92 evaluations and refusals since start (read at scrape time).
type selectorStats struct {
	// results counts evaluated messages by filter.Result: True delivered, the rest filtered
	// out (False, Unknown for NULL, Error where RocketMQ's evaluator throws).
	results [4]atomic.Uint64
	// unfiltered counts retried messages filterSupportRetry passed because their group has no
	// selector for their original topic.
	unfiltered atomic.Uint64
	// refused counts pulls refused by reason: disabled (enablePropertyFilter=false),
	// parse_failed (23), no_filter_data (27).
	disabled, parseFailed, noFilterData atomic.Uint64
}

// countParseFailure counts a pull refused because the selector it carried does not compile
// (a bad tag expression is not counted).
func (st *selectorStats) countParseFailure(typ string) {
	if !clients.IsTagType(typ) {
		st.parseFailed.Add(1)
	}
}

// recordFilter evaluates one pull's selector against the records the store reads. It counts
// locally (a pull is executed by one goroutine at a time) and adds to the broker's totals once
// per execution.
type recordFilter struct {
	expr *filter.Expr
	// byTopic, for a retry topic with filterSupportRetry, holds the group's selectors by
	// original topic (expr is nil then).
	byTopic    map[string]*filter.Expr
	results    [4]uint64
	unfiltered uint64
}

func (f *recordFilter) match(props []byte) bool {
	e := f.expr
	if f.byTopic != nil {
		topic, _ := lastProperty(props, propRetryTopic)
		if e = f.byTopic[string(topic)]; e == nil {
			f.unfiltered++
			return true
		}
	}
	r := e.EvalRaw(props)
	f.results[r&3]++
	return r == filter.True
}

// flush adds the counts to st and resets them.
func (f *recordFilter) flush(st *selectorStats) {
	for i, n := range f.results {
		if n > 0 {
			st.results[i].Add(n)
		}
	}
	if f.unfiltered > 0 {
		st.unfiltered.Add(f.unfiltered)
	}
	f.results, f.unfiltered = [4]uint64{}, 0
}

// lastProperty returns the value of the last pair named name in a stored properties section,
// the pair that wins when RocketMQ decodes properties into a map.
func lastProperty(props []byte, name string) (value []byte, ok bool) {
	for len(props) > 0 {
		pair := props
		if i := bytes.IndexByte(props, 0x02); i >= 0 {
			pair, props = props[:i], props[i+1:]
		} else {
			props = nil
		}
		j := bytes.IndexByte(pair, 0x01)
		if j <= 0 || j == len(pair)-1 {
			continue
		}
		if string(pair[:j]) == name {
			value, ok = pair[j+1:], true
		}
	}
	return value, ok
}

// checkSelector applies the refusals of a pull's subscription (see the comment at the top of
// this file) and, when it is served, returns the record filter for it (nil when no record is
// filtered by properties). A refusal is answered here and ok is false.
func (b *Broker) checkSelector(w remoting.ResponseWriter, req *remoting.Command, pr *pullRequest) (rf *recordFilter, ok bool) {
	sd := pr.sub
	if !sd.IsTagType() {
		expr, err := sd.Selector()
		if err != nil { // only from a heartbeat: a pull's own selector is checked when built
			b.sqlf.noFilterData.Add(1)
			b.pullError(w, req, remoting.FilterDataNotExist, noFilterDataRemark+" ("+err.Error()+")")
			return nil, false
		}
		if !b.live.enablePropertyFilter.Load() {
			b.sqlf.disabled.Add(1)
			b.pullError(w, req, remoting.SystemError, unsupportedFilterRemark+sd.ExpressionType)
			return nil, false
		}
		if sd.ClassFilterMode {
			return nil, true
		}
		return &recordFilter{expr: expr}, true
	}
	if b.live.filterSupportRetry.Load() && b.live.enablePropertyFilter.Load() && strings.HasPrefix(pr.topic, retryTopicPrefix) {
		group := strings.TrimPrefix(pr.topic, retryTopicPrefix)
		info, known := b.clients.reg.ConsumerGroup(group)
		if !known {
			return nil, true
		}
		var byTopic map[string]*filter.Expr
		for topic, s := range info.Subscriptions {
			if expr, err := s.Selector(); expr != nil && err == nil {
				if byTopic == nil {
					byTopic = map[string]*filter.Expr{}
				}
				byTopic[topic] = expr
			}
		}
		if byTopic != nil {
			return &recordFilter{byTopic: byTopic}, true
		}
	}
	return nil, true
}

// retryTopicPrefix names a consumer group's retry topic (%RETRY%group).
const retryTopicPrefix = "%RETRY%"

// checkClientRequest is the body of CHECK_CLIENT_CONFIG (Java's CheckClientRequestBody).
type checkClientRequest struct {
	ClientID         string                    `json:"clientId"`
	Group            string                    `json:"group"`
	SubscriptionData *clients.SubscriptionData `json:"subscriptionData"`
}

// handleCheckClientConfig answers CHECK_CLIENT_CONFIG (46), which Java's push and lite pull
// consumers send at start for each non-TAG subscription, so that a selector this broker
// cannot serve fails the consumer's start: SUCCESS for a tag subscription or none, SYSTEM_ERROR
// with RocketMQ's remark when enablePropertyFilter is off, SUBSCRIPTION_PARSE_FAILED with the
// parse error when the selector does not compile. A body that is not JSON is SYSTEM_ERROR.
func (b *Broker) handleCheckClientConfig(w remoting.ResponseWriter, req *remoting.Command) {
	var body checkClientRequest
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &body); err != nil {
			b.reply(w, req, remoting.SystemError, "invalid CHECK_CLIENT_CONFIG body: "+err.Error())
			return
		}
	}
	sd := body.SubscriptionData
	if sd == nil || sd.IsTagType() {
		b.replyOK(w, req, nil)
		return
	}
	if !b.live.enablePropertyFilter.Load() {
		b.reply(w, req, remoting.SystemError, unsupportedFilterRemark+sd.ExpressionType)
		return
	}
	if _, err := b.clients.filters.Compile(sd.ExpressionType, sd.SubString); err != nil {
		b.log.WithError(err).WithField("client", body.ClientID).WithField("group", body.Group).Warn("client's selector does not compile")
		b.reply(w, req, remoting.SubscriptionParseFailed, err.Error())
		return
	}
	b.replyOK(w, req, nil)
}

// Metrics of SQL92 filtering, read at scrape time (served with or without metricsEnable).
var (
	descSQLDelivered = desc("sql92_delivered_total", "Messages a SQL92 selector evaluated TRUE for (delivered).")
	descSQLFiltered  = desc("sql92_filtered_total", "Messages filtered out by a SQL92 selector, by result: false, unknown (NULL: a property it needs is missing), error (a property that does not convert, as RocketMQ's evaluator throws).", "result")
	descSQLRetryPass = desc("sql92_retry_unfiltered_total", "Retried messages filterSupportRetry delivered unfiltered: their group has no selector for their original topic.")
	descSQLRefused   = desc("sql92_pulls_refused_total", "Pulls with a non-TAG subscription refused, by reason: disabled (enablePropertyFilter=false, SYSTEM_ERROR), parse_failed (the pull's selector, SUBSCRIPTION_PARSE_FAILED), no_filter_data (the heartbeat's selector did not compile, FILTER_DATA_NOT_EXIST).", "reason")
	descSQLSubs      = desc("sql92_subscriptions", "Registered non-TAG subscriptions, by state: compiled, invalid (does not compile; the group's pulls are refused).", "state")
)

// selectorCollector serves the SQL92 metrics.
type selectorCollector struct{ b *Broker }

func (c *selectorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descSQLDelivered, descSQLFiltered, descSQLRetryPass, descSQLRefused, descSQLSubs} {
		ch <- d
	}
}

func (c *selectorCollector) Collect(ch chan<- prometheus.Metric) {
	st := &c.b.sqlf
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descSQLDelivered, st.results[filter.True].Load())
	counter(descSQLFiltered, st.results[filter.False].Load(), "false")
	counter(descSQLFiltered, st.results[filter.Unknown].Load(), "unknown")
	counter(descSQLFiltered, st.results[filter.Error].Load(), "error")
	counter(descSQLRetryPass, st.unfiltered.Load())
	counter(descSQLRefused, st.disabled.Load(), "disabled")
	counter(descSQLRefused, st.parseFailed.Load(), "parse_failed")
	counter(descSQLRefused, st.noFilterData.Load(), "no_filter_data")
	compiled, invalid := c.b.clients.selectorCounts()
	ch <- prometheus.MustNewConstMetric(descSQLSubs, prometheus.GaugeValue, float64(compiled), "compiled")
	ch <- prometheus.MustNewConstMetric(descSQLSubs, prometheus.GaugeValue, float64(invalid), "invalid")
}

// selectorCounts counts the registered non-TAG subscriptions that compiled and that did not.
func (r *clientRegistry) selectorCounts() (compiled, invalid int) {
	if r == nil {
		return 0, 0
	}
	for _, g := range r.reg.ConsumerGroups() {
		info, ok := r.reg.ConsumerGroup(g)
		if !ok {
			continue
		}
		for _, s := range info.Subscriptions {
			if s.IsTagType() {
				continue
			}
			if _, err := s.Selector(); err != nil {
				invalid++
			} else {
				compiled++
			}
		}
	}
	return compiled, invalid
}

// sqlRuntimeInfo adds the SQL92 keys to GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus):
// whether property filtering is on, the registered selectors and what they filtered.
func (b *Broker) sqlRuntimeInfo(t map[string]string) {
	st := &b.sqlf
	compiled, invalid := b.clients.selectorCounts()
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	t["enablePropertyFilter"] = strconv.FormatBool(b.live.enablePropertyFilter.Load())
	t["filterSupportRetry"] = strconv.FormatBool(b.live.filterSupportRetry.Load())
	t["sql92Subscriptions"] = strconv.Itoa(compiled)
	t["sql92InvalidSubscriptions"] = strconv.Itoa(invalid)
	t["sql92Delivered"] = u(st.results[filter.True].Load())
	t["sql92FilteredFalse"] = u(st.results[filter.False].Load())
	t["sql92FilteredUnknown"] = u(st.results[filter.Unknown].Load())
	t["sql92FilteredError"] = u(st.results[filter.Error].Load())
	t["sql92PullsRefused"] = u(st.disabled.Load() + st.parseFailed.Load() + st.noFilterData.Load())
}
