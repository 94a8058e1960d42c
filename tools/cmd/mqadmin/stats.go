package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// groupAddrs is where a group's state is asked for: --addr, else every master (of -c).
func (e *env) groupAddrs(ctx context.Context) ([]brokerRef, error) {
	if e.o.addr != "" {
		return []brokerRef{{Addr: e.o.addr}}, nil
	}
	return e.admin.masters(ctx, e.o.cluster)
}

func fmtTime(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// TopicStatusRow is one queue of topicStatus.
type TopicStatusRow struct {
	Broker      string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	MinOffset   int64  `json:"minOffset"`
	MaxOffset   int64  `json:"maxOffset"`
	LastUpdated int64  `json:"lastUpdateTimestamp"`
}

var cmdTopicStatus = &command{
	name:    "topicStatus",
	summary: "a topic's queues on every broker group: min and max offsets, last message time",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.addr, "addr", "", "ask this broker (host:port) only")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		ms, err := e.admin.topicMasters(ctx, e.o.topic, e.o.addr)
		if err != nil {
			return err
		}
		var rows []TopicStatusRow
		var errs []error
		for _, m := range ms {
			resp, err := e.admin.Invoke(ctx, m[1], remoting.GetTopicStatsInfo, map[string]string{"topic": e.o.topic}, nil)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			table, err := route.DecodeTopicStatsTable(resp.Body)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %w", ErrServer, m[1], err))
				continue
			}
			for q, o := range table {
				rows = append(rows, TopicStatusRow{q.BrokerName, q.QueueID, o.MinOffset, o.MaxOffset, o.LastUpdateTimestamp})
			}
		}
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].Broker != rows[j].Broker {
				return rows[i].Broker < rows[j].Broker
			}
			return rows[i].QueueID < rows[j].QueueID
		})
		if e.o.json {
			if rows == nil {
				rows = []TopicStatusRow{}
			}
			if err := printJSON(e.stdout, map[string]any{"topic": e.o.topic, "queues": rows}); err != nil {
				return err
			}
		} else {
			var t [][]string
			for _, r := range rows {
				t = append(t, []string{r.Broker, strconv.Itoa(int(r.QueueID)), strconv.FormatInt(r.MinOffset, 10), strconv.FormatInt(r.MaxOffset, 10), fmtTime(r.LastUpdated)})
			}
			if err := table(e.stdout, []string{"BROKER", "QID", "MIN_OFFSET", "MAX_OFFSET", "LAST_UPDATED"}, t); err != nil {
				return err
			}
		}
		return worst(errs...)
	},
}

// ConnectionRow is one client connection as a broker reports it.
type ConnectionRow struct {
	Broker string `json:"broker"`
	route.Connection
}

func connectionTable(e *env, rows []ConnectionRow) error {
	var t [][]string
	for _, r := range rows {
		t = append(t, []string{r.ClientID, r.ClientAddr, r.Language, strconv.Itoa(int(r.Version)), r.Broker})
	}
	return table(e.stdout, []string{"CLIENT_ID", "CLIENT_ADDR", "LANGUAGE", "VERSION", "BROKER"}, t)
}

var cmdConsumerConnection = &command{
	name:    "consumerConnection",
	summary: "a consumer group's connected clients and subscription, from every master",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.group, "g", "", "consumer group (required)")
		fs.StringVar(&o.cluster, "c", "", "only the masters of this cluster")
		fs.StringVar(&o.addr, "addr", "", "ask this broker (host:port) only")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("g", e.o.group); err != nil {
			return err
		}
		bs, err := e.groupAddrs(ctx)
		if err != nil {
			return err
		}
		var rows []ConnectionRow
		var last *route.ConsumerConnection
		var errs []error
		for _, b := range bs {
			resp, err := e.admin.Invoke(ctx, b.Addr, remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": e.o.group}, nil)
			if err != nil {
				var se *serverError
				if errors.As(err, &se) && se.code == remoting.ConsumerNotOnline {
					continue
				}
				errs = append(errs, err)
				continue
			}
			cc, err := route.DecodeConsumerConnection(resp.Body)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %w", ErrServer, b.Addr, err))
				continue
			}
			last = &cc
			for _, c := range cc.ConnectionSet {
				rows = append(rows, ConnectionRow{Broker: b.Addr, Connection: c})
			}
		}
		if err := worst(errs...); err != nil && last == nil {
			return err
		}
		if last == nil {
			return fmt.Errorf("%w: the consumer group[%s] not online", ErrNotFound, e.o.group)
		}
		if e.o.json {
			return printJSON(e.stdout, map[string]any{"group": e.o.group, "connections": rows, "consumeType": last.ConsumeType,
				"messageModel": last.MessageModel, "consumeFromWhere": last.ConsumeFromWhere, "subscriptions": last.SubscriptionTable})
		}
		if err := connectionTable(e, rows); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "\nBelow is subscription:")
		var t [][]string
		for _, topic := range sortedKeys(last.SubscriptionTable) {
			t = append(t, []string{topic, last.SubscriptionTable[topic].SubString})
		}
		if err := table(e.stdout, []string{"TOPIC", "SUB_EXPRESSION"}, t); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nConsumeType: %s\nMessageModel: %s\nConsumeFromWhere: %s\n", last.ConsumeType, last.MessageModel, last.ConsumeFromWhere)
		return worst(errs...)
	},
}

var cmdProducerConnection = &command{
	name:    "producerConnection",
	summary: "a producer group's connected clients, from the masters of a topic",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.group, "g", "", "producer group (required)")
		fs.StringVar(&o.topic, "t", "", "topic (required: its route names the brokers)")
		fs.StringVar(&o.addr, "addr", "", "ask this broker (host:port) only")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("g", e.o.group); err != nil {
			return err
		}
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		ms, err := e.admin.topicMasters(ctx, e.o.topic, e.o.addr)
		if err != nil {
			return err
		}
		var rows []ConnectionRow
		var errs []error
		for _, m := range ms {
			resp, err := e.admin.Invoke(ctx, m[1], remoting.GetProducerConnectionList, map[string]string{"producerGroup": e.o.group}, nil)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			pc, err := route.DecodeProducerConnection(resp.Body)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %w", ErrServer, m[1], err))
				continue
			}
			for _, c := range pc.ConnectionSet {
				rows = append(rows, ConnectionRow{Broker: m[1], Connection: c})
			}
		}
		if e.o.json {
			if rows == nil {
				rows = []ConnectionRow{}
			}
			if err := printJSON(e.stdout, map[string]any{"group": e.o.group, "connections": rows}); err != nil {
				return err
			}
		} else if err := connectionTable(e, rows); err != nil {
			return err
		}
		return worst(errs...)
	},
}

// ConsumeStatusRow is one queue of consumerStatus.
type ConsumeStatusRow struct {
	Topic          string `json:"topic"`
	Broker         string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Diff           int64  `json:"diff"`
	LastTimestamp  int64  `json:"lastTimestamp"`
}

var cmdConsumerStatus = &command{
	name:    "consumerStatus",
	summary: "a consumer group's consumption per queue (GET_CONSUME_STATS from every master): offsets, lag, last consumed time",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.group, "g", "", "consumer group (required)")
		fs.StringVar(&o.topic, "t", "", "only this topic")
		fs.StringVar(&o.cluster, "c", "", "only the masters of this cluster")
		fs.StringVar(&o.addr, "addr", "", "ask this broker (host:port) only")
		fs.StringVar(&o.clientID, "i", "", "this client's running info instead (GET_CONSUMER_RUNNING_INFO through its broker)")
		fs.BoolVar(&o.jstack, "s", false, "with -i: ask for the client's stack too (Java clients)")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("g", e.o.group); err != nil {
			return err
		}
		bs, err := e.groupAddrs(ctx)
		if err != nil {
			return err
		}
		if e.o.clientID != "" {
			return consumerRunningInfo(ctx, e, bs)
		}
		var rows []ConsumeStatusRow
		var errs []error
		var consumeTps float64 // the group's get rate over the last minute, summed over the masters
		for _, b := range bs {
			ext := map[string]string{"consumerGroup": e.o.group}
			if e.o.topic != "" {
				ext["topic"] = e.o.topic
			}
			resp, err := e.admin.Invoke(ctx, b.Addr, remoting.GetConsumeStats, ext, nil)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			tps, table, err := route.DecodeConsumeStats(resp.Body)
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: %s: %w", ErrServer, b.Addr, err))
				continue
			}
			consumeTps += tps
			for q, o := range table {
				rows = append(rows, ConsumeStatusRow{q.Topic, q.BrokerName, q.QueueID, o.BrokerOffset, o.ConsumerOffset, o.BrokerOffset - o.ConsumerOffset, o.LastTimestamp})
			}
		}
		sort.Slice(rows, func(i, j int) bool {
			a, b := rows[i], rows[j]
			if a.Topic != b.Topic {
				return a.Topic < b.Topic
			}
			if a.Broker != b.Broker {
				return a.Broker < b.Broker
			}
			return a.QueueID < b.QueueID
		})
		var total int64
		for _, r := range rows {
			total += r.Diff
		}
		if e.o.json {
			if rows == nil {
				rows = []ConsumeStatusRow{}
			}
			if err := printJSON(e.stdout, map[string]any{"group": e.o.group, "queues": rows, "diffTotal": total, "consumeTps": consumeTps}); err != nil {
				return err
			}
		} else {
			var t [][]string
			for _, r := range rows {
				t = append(t, []string{r.Topic, r.Broker, strconv.Itoa(int(r.QueueID)), strconv.FormatInt(r.BrokerOffset, 10),
					strconv.FormatInt(r.ConsumerOffset, 10), strconv.FormatInt(r.Diff, 10), fmtTime(r.LastTimestamp)})
			}
			if err := table(e.stdout, []string{"TOPIC", "BROKER", "QID", "BROKER_OFFSET", "CONSUMER_OFFSET", "DIFF", "LAST_TIME"}, t); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "\nConsume TPS: %.2f\nDiff Total: %d\n", consumeTps, total)
		}
		return worst(errs...)
	},
}

// BrokerConsumeRow is one queue of brokerConsumeStats.
type BrokerConsumeRow struct {
	Topic          string `json:"topic"`
	Group          string `json:"group"`
	Broker         string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Diff           int64  `json:"diff"`
	LastTimestamp  int64  `json:"lastTimestamp"`
}

var cmdBrokerConsumeStats = &command{
	name:    "brokerConsumeStats",
	summary: "every group's consumption on one broker (GET_BROKER_CONSUME_STATS): offsets and lag per queue",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.broker, "b", "", "broker address (required)")
		fs.StringVar(&o.orderOnly, "o", "false", "\"true\": only ordered topics")
		fs.Int64Var(&o.level, "l", 0, "only queues at least this far behind")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("b", e.o.broker); err != nil {
			return err
		}
		resp, err := e.admin.Invoke(ctx, e.o.broker, remoting.GetBrokerConsumeStats, map[string]string{"isOrder": strconv.FormatBool(e.o.orderOnly == "true")}, nil)
		if err != nil {
			return err
		}
		l, err := route.DecodeConsumeStatsList(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrServer, e.o.broker, err)
		}
		var rows []BrokerConsumeRow
		for _, g := range l.Groups {
			for _, s := range g.Stats {
				for q, o := range s.OffsetTable {
					if d := o.BrokerOffset - o.ConsumerOffset; d >= e.o.level {
						rows = append(rows, BrokerConsumeRow{q.Topic, g.Group, q.BrokerName, q.QueueID, o.BrokerOffset, o.ConsumerOffset, d, o.LastTimestamp})
					}
				}
			}
		}
		sort.Slice(rows, func(i, j int) bool {
			a, b := rows[i], rows[j]
			if a.Group != b.Group {
				return a.Group < b.Group
			}
			if a.Topic != b.Topic {
				return a.Topic < b.Topic
			}
			return a.QueueID < b.QueueID
		})
		if e.o.json {
			if rows == nil {
				rows = []BrokerConsumeRow{}
			}
			return printJSON(e.stdout, map[string]any{"brokerAddr": l.BrokerAddr, "queues": rows, "diffTotal": l.TotalDiff})
		}
		var t [][]string
		for _, r := range rows {
			t = append(t, []string{r.Topic, r.Group, r.Broker, strconv.Itoa(int(r.QueueID)), strconv.FormatInt(r.BrokerOffset, 10),
				strconv.FormatInt(r.ConsumerOffset, 10), strconv.FormatInt(r.Diff, 10), fmtTime(r.LastTimestamp)})
		}
		if err := table(e.stdout, []string{"TOPIC", "GROUP", "BROKER", "QID", "BROKER_OFFSET", "CONSUMER_OFFSET", "DIFF", "LAST_TIME"}, t); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nDiff Total: %d\n", l.TotalDiff)
		return nil
	},
}

// consumerRunningInfo asks the first broker of bs that the client -i is connected to for its
// running info (the broker forwards GET_CONSUMER_RUNNING_INFO to the client) and prints it.
func consumerRunningInfo(ctx context.Context, e *env, bs []brokerRef) error {
	var errs []error
	for _, b := range bs {
		resp, err := e.admin.Invoke(ctx, b.Addr, remoting.GetConsumerConnectionList, map[string]string{"consumerGroup": e.o.group}, nil)
		if err != nil {
			var se *serverError
			if !errors.As(err, &se) || se.code != remoting.ConsumerNotOnline {
				errs = append(errs, err)
			}
			continue
		}
		cc, err := route.DecodeConsumerConnection(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrServer, b.Addr, err))
			continue
		}
		found := false
		for _, c := range cc.ConnectionSet {
			found = found || c.ClientID == e.o.clientID
		}
		if !found {
			continue
		}
		ext := map[string]string{"consumerGroup": e.o.group, "clientId": e.o.clientID, "jstackEnable": strconv.FormatBool(e.o.jstack)}
		resp, err = e.admin.Invoke(ctx, b.Addr, remoting.GetConsumerRunningInfo, ext, nil)
		if err != nil {
			return err
		}
		info, err := route.DecodeConsumerRunningInfo(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: running info of %s through %s: %w", ErrServer, e.o.clientID, b.Addr, err)
		}
		return printRunningInfo(e, b.Addr, info)
	}
	if err := worst(errs...); err != nil {
		return err
	}
	return fmt.Errorf("%w: the consumer <%s> <%s> is not connected to any broker asked", ErrNotFound, e.o.group, e.o.clientID)
}

// RunningQueueRow is one queue of a consumer's running info.
type RunningQueueRow struct {
	route.MessageQueue
	route.ProcessQueueInfo
}

func printRunningInfo(e *env, broker string, info route.ConsumerRunningInfo) error {
	var queues []RunningQueueRow
	for q, p := range info.MQTable {
		queues = append(queues, RunningQueueRow{q, p})
	}
	sort.Slice(queues, func(i, j int) bool {
		a, b := queues[i].MessageQueue, queues[j].MessageQueue
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.BrokerName != b.BrokerName {
			return a.BrokerName < b.BrokerName
		}
		return a.QueueID < b.QueueID
	})
	if e.o.json {
		if queues == nil {
			queues = []RunningQueueRow{}
		}
		return printJSON(e.stdout, map[string]any{"group": e.o.group, "clientId": e.o.clientID, "broker": broker,
			"properties": info.Properties, "subscriptions": info.Subscriptions, "queues": queues, "status": info.StatusTable, "jstack": info.JStack})
	}
	fmt.Fprintf(e.stdout, "#Consumer Properties# (%s through %s)\n", e.o.clientID, broker)
	var t [][]string
	for _, k := range sortedKeys(info.Properties) {
		t = append(t, []string{k, info.Properties[k]})
	}
	if err := table(e.stdout, []string{"KEY", "VALUE"}, t); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "\n#Consumer Subscription#")
	t = nil
	for _, s := range info.Subscriptions {
		t = append(t, []string{s.Topic, s.SubString, s.ExpressionType})
	}
	if err := table(e.stdout, []string{"TOPIC", "SUB_EXPRESSION", "TYPE"}, t); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "\n#Consumer Offset#")
	t = nil
	for _, q := range queues {
		t = append(t, []string{q.Topic, q.BrokerName, strconv.Itoa(int(q.QueueID)), strconv.FormatInt(q.CommitOffset, 10),
			strconv.FormatInt(q.CachedMsgCount, 10), fmtTime(q.LastPullTimestamp), fmtTime(q.LastConsumeTimestamp),
			strconv.FormatBool(q.Locked), strconv.FormatBool(q.Dropped)})
	}
	if err := table(e.stdout, []string{"TOPIC", "BROKER", "QID", "COMMIT_OFFSET", "CACHED_MSGS", "LAST_PULL", "LAST_CONSUME", "LOCKED", "DROPPED"}, t); err != nil {
		return err
	}
	if info.JStack != "" {
		fmt.Fprintf(e.stdout, "\n#Consumer jstack#\n%s\n", info.JStack)
	}
	return nil
}

// StatsAllRow is one (topic, group) of statsAll, Java's columns: the group's accumulation
// (messages not yet consumed), the topic's put rate and the group's get rate over the last
// minute, and their messages over the last 24 hours (VIEW_BROKER_STATS_DATA of the masters).
// A topic without consumer groups has one row with an empty group and NoConsumer set.
type StatsAllRow struct {
	Topic        string  `json:"topic"`
	Group        string  `json:"group"`
	Accumulation int64   `json:"accumulation"`
	InTPS        float64 `json:"inTps"`
	OutTPS       float64 `json:"outTps"`
	InMsg24Hour  int64   `json:"inMsg24Hour"`
	OutMsg24Hour int64   `json:"outMsg24Hour"`
	NoConsumer   bool    `json:"noConsumer,omitempty"`
}

// compute24HourSum is Java's: the day window's sum, else the hour's, else the minute's (a
// broker up for less than an hour has no day samples yet).
func compute24HourSum(d route.BrokerStatsData) int64 {
	for _, s := range []int64{d.StatsDay.Sum, d.StatsHour.Sum, d.StatsMinute.Sum} {
		if s != 0 {
			return s
		}
	}
	return 0
}

// viewStats asks a broker for VIEW_BROKER_STATS_DATA; an item the broker never counted
// (SYSTEM_ERROR "The stats <..> <..> not exist") is zero, as the Java tool reads it.
func (a *Admin) viewStats(ctx context.Context, addr, name, key string) (route.BrokerStatsData, error) {
	resp, err := a.Invoke(ctx, addr, remoting.ViewBrokerStatsData, map[string]string{"statsName": name, "statsKey": key}, nil)
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && se.code == remoting.SystemError && strings.HasSuffix(se.remark, " not exist") {
			return route.BrokerStatsData{}, nil
		}
		return route.BrokerStatsData{}, err
	}
	d, err := route.DecodeBrokerStatsData(resp.Body)
	if err != nil {
		return d, fmt.Errorf("%w: %s: %w", ErrServer, addr, err)
	}
	return d, nil
}

var cmdStatsAll = &command{
	name:    "statsAll",
	summary: "every topic's consumer groups: accumulation, in/out TPS over the last minute and messages over 24 hours, from the masters",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "only this topic")
		fs.BoolVar(&o.showAll, "a", false, "only active topics: some message in or out over the last 24 hours (Java's activeTopic)")
	},
	run: func(ctx context.Context, e *env) error {
		topics := []string{e.o.topic}
		if e.o.topic == "" {
			all, err := e.admin.TopicList(ctx)
			if err != nil {
				return err
			}
			topics = topics[:0]
			for _, t := range all {
				if !strings.HasPrefix(t, "%RETRY%") && !strings.HasPrefix(t, "%DLQ%") {
					topics = append(topics, t)
				}
			}
		}
		var rows []StatsAllRow
		var errs []error
		for _, topic := range topics {
			ms, err := e.admin.topicMasters(ctx, topic, "")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			var inTPS float64
			var in24 int64
			groups := map[string]bool{}
			for _, m := range ms {
				d, err := e.admin.viewStats(ctx, m[1], "TOPIC_PUT_NUMS", topic)
				if err != nil {
					errs = append(errs, err)
				}
				inTPS += d.StatsMinute.Tps
				in24 += compute24HourSum(d)
				resp, err := e.admin.Invoke(ctx, m[1], remoting.QueryTopicConsumeByWho, map[string]string{"topic": topic}, nil)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				gl, err := route.DecodeGroupList(resp.Body)
				if err != nil {
					errs = append(errs, fmt.Errorf("%w: %s: %w", ErrServer, m[1], err))
					continue
				}
				for _, g := range gl {
					groups[g] = true
				}
			}
			if len(groups) == 0 {
				if !e.o.showAll || in24 > 0 {
					rows = append(rows, StatsAllRow{Topic: topic, InTPS: inTPS, InMsg24Hour: in24, NoConsumer: true})
				}
				continue
			}
			for _, g := range sortedKeys(groups) {
				row := StatsAllRow{Topic: topic, Group: g, InTPS: inTPS, InMsg24Hour: in24}
				for _, m := range ms {
					d, err := e.admin.viewStats(ctx, m[1], "GROUP_GET_NUMS", topic+"@"+g)
					if err != nil {
						errs = append(errs, err)
					}
					row.OutTPS += d.StatsMinute.Tps
					row.OutMsg24Hour += compute24HourSum(d)
					resp, err := e.admin.Invoke(ctx, m[1], remoting.GetConsumeStats, map[string]string{"consumerGroup": g, "topic": topic}, nil)
					if err != nil {
						errs = append(errs, err)
						continue
					}
					_, table, err := route.DecodeConsumeStats(resp.Body)
					if err != nil {
						errs = append(errs, fmt.Errorf("%w: %s: %w", ErrServer, m[1], err))
						continue
					}
					for _, o := range table {
						row.Accumulation += o.BrokerOffset - o.ConsumerOffset
					}
				}
				row.Accumulation = max(row.Accumulation, 0)
				if !e.o.showAll || row.InMsg24Hour > 0 || row.OutMsg24Hour > 0 {
					rows = append(rows, row)
				}
			}
		}
		if e.o.json {
			if rows == nil {
				rows = []StatsAllRow{}
			}
			if err := printJSON(e.stdout, rows); err != nil {
				return err
			}
			return worst(errs...)
		}
		var t [][]string
		tps := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
		for _, r := range rows {
			if r.NoConsumer {
				t = append(t, []string{r.Topic, "", "0", tps(r.InTPS), "", strconv.FormatInt(r.InMsg24Hour, 10), "NO_CONSUMER"})
				continue
			}
			t = append(t, []string{r.Topic, r.Group, strconv.FormatInt(r.Accumulation, 10), tps(r.InTPS), tps(r.OutTPS),
				strconv.FormatInt(r.InMsg24Hour, 10), strconv.FormatInt(r.OutMsg24Hour, 10)})
		}
		if err := table(e.stdout, []string{"#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour"}, t); err != nil {
			return err
		}
		return worst(errs...)
	},
}
