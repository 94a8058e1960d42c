package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// BrokerRow is one line of clusterList.
type BrokerRow struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	Addr       string `json:"addr"`
	Role       string `json:"role,omitempty"`
	Version    string `json:"version,omitempty"`
	MinOffset  int64  `json:"minOffset"`
	MaxOffset  int64  `json:"maxOffset"`
	Error      string `json:"error,omitempty"`
}

var cmdClusterList = &command{
	name:    "clusterList",
	summary: "brokers of every cluster: roles, addresses, versions, CommitLog offsets",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.cluster, "c", "", "only this cluster")
	},
	run: func(ctx context.Context, e *env) error {
		ci, err := e.admin.ClusterInfo(ctx)
		if err != nil {
			return err
		}
		var rows []BrokerRow
		var errs []error
		unreachable := map[int]bool{}
		for _, b := range brokers(ci, e.o.cluster) {
			r := BrokerRow{Cluster: b.Cluster, BrokerName: b.BrokerName, BrokerID: b.BrokerID, Addr: b.Addr}
			kv, err := e.admin.RuntimeInfo(ctx, b.Addr)
			if err != nil {
				r.Error = err.Error()
				errs = append(errs, err)
				unreachable[len(rows)] = errors.Is(err, ErrUnreachable)
			} else {
				r.Role, r.Version = kv["brokerRole"], kv["brokerVersionDesc"]
				r.MinOffset, _ = strconv.ParseInt(kv["commitLogMinOffset"], 10, 64)
				r.MaxOffset, _ = strconv.ParseInt(kv["commitLogMaxOffset"], 10, 64)
			}
			rows = append(rows, r)
		}
		if e.o.json {
			if err := printJSON(e.stdout, map[string]any{"brokers": rows}); err != nil {
				return err
			}
		} else {
			var t [][]string
			for i, r := range rows {
				role, ver := r.Role, r.Version
				if r.Error != "" {
					role, ver = "ERROR", "-"
					if unreachable[i] {
						role = "UNREACHABLE"
					}
				}
				t = append(t, []string{r.Cluster, r.BrokerName, strconv.FormatInt(r.BrokerID, 10), r.Addr, role, ver,
					strconv.FormatInt(r.MinOffset, 10), strconv.FormatInt(r.MaxOffset, 10)})
			}
			if err := table(e.stdout, []string{"CLUSTER", "BROKER", "ID", "ADDR", "ROLE", "VERSION", "MIN_OFFSET", "MAX_OFFSET"}, t); err != nil {
				return err
			}
		}
		return worst(errs...)
	},
}

var cmdTopicList = &command{
	name:    "topicList",
	summary: "every topic the name server knows",
	run: func(ctx context.Context, e *env) error {
		topics, err := e.admin.TopicList(ctx)
		if err != nil {
			return err
		}
		if e.o.json {
			return printJSON(e.stdout, map[string]any{"topics": topics})
		}
		for _, t := range topics {
			fmt.Fprintln(e.stdout, t)
		}
		return nil
	},
}

var cmdTopicRoute = &command{
	name:    "topicRoute",
	summary: "a topic's route: queues per broker group and broker addresses",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		rd, err := e.admin.TopicRoute(ctx, e.o.topic)
		if err != nil {
			return err
		}
		if e.o.json {
			return printJSON(e.stdout, rd)
		}
		addrs := map[string]string{}
		for _, bd := range rd.BrokerDatas {
			ids := make([]int64, 0, len(bd.BrokerAddrs))
			for id := range bd.BrokerAddrs {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			var parts []string
			for _, id := range ids {
				parts = append(parts, fmt.Sprintf("%d=%s", id, bd.BrokerAddrs[id]))
			}
			addrs[bd.BrokerName] = strings.Join(parts, " ")
		}
		qds := append([]route.QueueData(nil), rd.QueueDatas...)
		sort.Slice(qds, func(i, j int) bool { return qds[i].BrokerName < qds[j].BrokerName })
		var t [][]string
		for _, q := range qds {
			t = append(t, []string{q.BrokerName, strconv.Itoa(int(q.ReadQueueNums)), strconv.Itoa(int(q.WriteQueueNums)),
				permString(q.Perm), addrs[q.BrokerName]})
		}
		return table(e.stdout, []string{"BROKER", "READ_QUEUES", "WRITE_QUEUES", "PERM", "ADDRS"}, t)
	},
}

// permString renders perm bits the way operators read them: R, W, X for inherit.
func permString(p int32) string {
	s := ""
	if route.IsReadable(p) {
		s += "R"
	} else {
		s += "-"
	}
	if route.IsWriteable(p) {
		s += "W"
	} else {
		s += "-"
	}
	if route.IsInherited(p) {
		s += "X"
	}
	return fmt.Sprintf("%s(%d)", s, p)
}

// OpResult is the outcome of one write operation on one server.
type OpResult struct {
	Addr  string `json:"addr"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

// eachTarget runs op on every address and reports each outcome.
func eachTarget(ctx context.Context, e *env, what string, addrs []string, op func(addr string) error) error {
	var res []OpResult
	var errs []error
	for _, a := range addrs {
		err := op(a)
		r := OpResult{Addr: a, OK: err == nil}
		if err != nil {
			r.Error = err.Error()
			errs = append(errs, err)
		}
		res = append(res, r)
	}
	if e.o.json {
		if err := printJSON(e.stdout, map[string]any{"operation": what, "results": res}); err != nil {
			return err
		}
	} else {
		for _, r := range res {
			if r.OK {
				fmt.Fprintf(e.stdout, "%s on %s: success\n", what, r.Addr)
			} else {
				fmt.Fprintf(e.stdout, "%s on %s: FAILED: %s\n", what, r.Addr, r.Error)
			}
		}
	}
	return worst(errs...)
}

var cmdUpdateTopic = &command{
	name:    "updateTopic",
	summary: "create or update a topic on one broker (-b) or every master of a cluster (-c)",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.cluster, "c", "", "create on every master of this cluster")
		fs.StringVar(&o.broker, "b", "", "create on this broker address")
		fs.IntVar(&o.readQ, "r", 8, "read queue count")
		fs.IntVar(&o.writeQ, "w", 8, "write queue count")
		fs.IntVar(&o.perm, "p", route.DefaultTopicPerm, "permission bits (2 write, 4 read, 6 both)")
		fs.BoolVar(&o.order, "o", false, "ordered topic")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		if err := meta.ValidateTopicName(e.o.topic); err != nil {
			return fmt.Errorf("%w: -t %q: %v", ErrUsage, e.o.topic, err)
		}
		if e.o.readQ < 1 || e.o.writeQ < 1 || e.o.readQ > 1024 || e.o.writeQ > 1024 {
			return fmt.Errorf("%w: -r and -w must be in [1, 1024]", ErrUsage)
		}
		if e.o.perm < 0 || e.o.perm > 7 {
			return fmt.Errorf("%w: -p %d not in [0, 7]", ErrUsage, e.o.perm)
		}
		addrs, err := e.admin.targets(ctx, e.o.broker, e.o.cluster)
		if err != nil {
			return err
		}
		ext := map[string]string{
			"topic": e.o.topic, "defaultTopic": "TBW102",
			"readQueueNums": strconv.Itoa(e.o.readQ), "writeQueueNums": strconv.Itoa(e.o.writeQ),
			"perm": strconv.Itoa(e.o.perm), "topicFilterType": route.TopicFilterTypeSingleTag,
			"topicSysFlag": "0", "order": strconv.FormatBool(e.o.order),
		}
		return eachTarget(ctx, e, "update topic "+e.o.topic, addrs, func(addr string) error {
			_, err := e.admin.Invoke(ctx, addr, remoting.UpdateAndCreateTopic, ext, nil)
			return err
		})
	},
}

var cmdDeleteTopic = &command{
	name:    "deleteTopic",
	summary: "delete a topic from every master of a cluster and from the name servers",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.cluster, "c", "", "cluster (required)")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		if err := needFlag("c", e.o.cluster); err != nil {
			return err
		}
		addrs, err := e.admin.targets(ctx, "", e.o.cluster)
		if err != nil {
			return err
		}
		brokerErr := eachTarget(ctx, e, "delete topic "+e.o.topic, addrs, func(addr string) error {
			_, err := e.admin.Invoke(ctx, addr, remoting.DeleteTopicInBroker, map[string]string{"topic": e.o.topic}, nil)
			return err
		})
		// The name servers drop the topic when the brokers re-register without it; the
		// explicit request makes it immediate where the name server supports it.
		var nsErrs []error
		for _, ns := range e.admin.cfg.Namesrvs {
			_, err := e.admin.Invoke(ctx, ns, remoting.DeleteTopicInNameSrv, map[string]string{"topic": e.o.topic}, nil)
			var se *serverError
			if errors.As(err, &se) && se.code == remoting.RequestCodeNotSupported {
				continue
			}
			if err != nil {
				nsErrs = append(nsErrs, err)
			}
		}
		if len(nsErrs) > 0 && !e.o.json {
			for _, err := range nsErrs {
				fmt.Fprintf(e.stderr, "name server: %v\n", err)
			}
		}
		return worst(append([]error{brokerErr}, nsErrs...)...)
	},
}

// GroupRow is one line of consumerGroupList.
type GroupRow struct {
	Broker string `json:"broker"`
	meta.SubscriptionGroupConfig
}

// masters returns the master address of every broker group (of one cluster when given).
func (a *Admin) masters(ctx context.Context, cluster string) ([]brokerRef, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []brokerRef
	for _, b := range brokers(ci, cluster) {
		if b.BrokerID == route.MasterID {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		if cluster != "" {
			return nil, fmt.Errorf("%w: no master in cluster %q", ErrNotFound, cluster)
		}
		return nil, fmt.Errorf("%w: the name server knows no master", ErrNotFound)
	}
	return out, nil
}

// groupAddrs resolves -b, or the masters of -c (every master when neither is given).
func (a *Admin) groupAddrs(ctx context.Context, broker, cluster string) ([]string, error) {
	if broker != "" {
		return a.targets(ctx, broker, cluster)
	}
	ms, err := a.masters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Addr)
	}
	return out, nil
}

var cmdConsumerGroupList = &command{
	name:    "consumerGroupList",
	summary: "subscription groups of every master (or -c cluster, -b broker)",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.cluster, "c", "", "only masters of this cluster")
		fs.StringVar(&o.broker, "b", "", "only this broker address")
	},
	run: func(ctx context.Context, e *env) error {
		addrs, err := e.admin.groupAddrs(ctx, e.o.broker, e.o.cluster)
		if err != nil {
			return err
		}
		var rows []GroupRow
		var errs []error
		for _, addr := range addrs {
			resp, err := e.admin.Invoke(ctx, addr, remoting.GetAllSubscriptionGroupConfig, nil, nil)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			body, err := route.Lenient(resp.Body)
			var tbl struct {
				SubscriptionGroupTable map[string]meta.SubscriptionGroupConfig `json:"subscriptionGroupTable"`
			}
			if err == nil {
				err = json.Unmarshal(body, &tbl)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%w: groups of %s: %w", ErrServer, addr, err))
				continue
			}
			for _, name := range sortedKeys(tbl.SubscriptionGroupTable) {
				g := tbl.SubscriptionGroupTable[name]
				if g.GroupName == "" {
					g.GroupName = name
				}
				rows = append(rows, GroupRow{Broker: addr, SubscriptionGroupConfig: g})
			}
		}
		if e.o.json {
			if err := printJSON(e.stdout, map[string]any{"groups": rows}); err != nil {
				return err
			}
		} else {
			var t [][]string
			for _, r := range rows {
				t = append(t, []string{r.GroupName, r.Broker, strconv.FormatBool(r.ConsumeEnable), strconv.FormatBool(r.ConsumeBroadcastEnable),
					strconv.Itoa(int(r.RetryQueueNums)), strconv.Itoa(int(r.RetryMaxTimes)),
					strconv.FormatInt(r.BrokerID, 10), strconv.FormatInt(r.WhichBrokerWhenConsumeSlowly, 10)})
			}
			if err := table(e.stdout, []string{"GROUP", "BROKER", "CONSUME", "BROADCAST", "RETRY_QUEUES", "RETRY_MAX", "READ_FROM", "SLOW_READ_FROM"}, t); err != nil {
				return err
			}
		}
		return worst(errs...)
	},
}

var cmdUpdateSubGroup = &command{
	name:    "updateSubGroup",
	summary: "create or update a subscription group on -b broker or every master of -c cluster",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.group, "g", "", "group (required)")
		fs.StringVar(&o.cluster, "c", "", "every master of this cluster (default: every master)")
		fs.StringVar(&o.broker, "b", "", "this broker address")
		fs.IntVar(&o.retryQ, "q", 1, "retry queue count")
		fs.IntVar(&o.retryMax, "m", 16, "maximum redeliveries")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("g", e.o.group); err != nil {
			return err
		}
		if err := meta.ValidateTopicName(e.o.group); err != nil {
			return fmt.Errorf("%w: -g %q: %v", ErrUsage, e.o.group, err)
		}
		addrs, err := e.admin.groupAddrs(ctx, e.o.broker, e.o.cluster)
		if err != nil {
			return err
		}
		gc := meta.NewSubscriptionGroupConfig(e.o.group)
		gc.RetryQueueNums, gc.RetryMaxTimes = int32(e.o.retryQ), int32(e.o.retryMax)
		body, err := json.Marshal(gc)
		if err != nil {
			return err
		}
		return eachTarget(ctx, e, "update group "+e.o.group, addrs, func(addr string) error {
			_, err := e.admin.Invoke(ctx, addr, remoting.UpdateAndCreateSubscriptionGroup, nil, body)
			return err
		})
	},
}

var cmdDeleteSubGroup = &command{
	name:    "deleteSubGroup",
	summary: "delete a subscription group from -b broker or every master of -c cluster",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.group, "g", "", "group (required)")
		fs.StringVar(&o.cluster, "c", "", "every master of this cluster (default: every master)")
		fs.StringVar(&o.broker, "b", "", "this broker address")
		fs.BoolVar(&o.clean, "r", false, "also remove the group's committed offsets")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("g", e.o.group); err != nil {
			return err
		}
		addrs, err := e.admin.groupAddrs(ctx, e.o.broker, e.o.cluster)
		if err != nil {
			return err
		}
		ext := map[string]string{"groupName": e.o.group, "cleanOffset": strconv.FormatBool(e.o.clean)}
		return eachTarget(ctx, e, "delete group "+e.o.group, addrs, func(addr string) error {
			_, err := e.admin.Invoke(ctx, addr, remoting.DeleteSubscriptionGroup, ext, nil)
			return err
		})
	},
}

var cmdBrokerStatus = &command{
	name:    "brokerStatus",
	summary: "a broker's runtime information (GET_BROKER_RUNTIME_INFO)",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.broker, "b", "", "broker address (required)")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("b", e.o.broker); err != nil {
			return err
		}
		kv, err := e.admin.RuntimeInfo(ctx, e.o.broker)
		if err != nil {
			return err
		}
		if e.o.json {
			return printJSON(e.stdout, kv)
		}
		var t [][]string
		for _, k := range sortedKeys(kv) {
			t = append(t, []string{k, kv[k]})
		}
		return table(e.stdout, []string{"KEY", "VALUE"}, t)
	},
}
