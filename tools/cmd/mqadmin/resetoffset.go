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

// ResetRow is one queue of resetOffsetByTime's result.
type ResetRow struct {
	Broker  string `json:"brokerName"`
	Addr    string `json:"addr"`
	QueueID int32  `json:"queueId"`
	Offset  int64  `json:"offset"`
}

// parseResetTime reads -s as Java's tool does: "now", milliseconds since the epoch, or
// yyyy-MM-dd#HH:mm:ss:SSS in local time.
func parseResetTime(s string, now time.Time) (int64, error) {
	switch {
	case s == "":
		return 0, fmt.Errorf("%w: -s is required (now, ms since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS)", ErrUsage)
	case strings.EqualFold(s, "now"):
		return now.UnixMilli(), nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05:000", s, time.Local)
	if err != nil {
		return 0, fmt.Errorf("%w: -s %q is not now, ms since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS", ErrUsage, s)
	}
	return t.UnixMilli(), nil
}

// topicMasters lists (brokerName, master address) of the topic's route, or the one --addr.
func (a *Admin) topicMasters(ctx context.Context, topic, addr string) ([][2]string, error) {
	if addr != "" {
		return [][2]string{{"", addr}}, nil
	}
	rd, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, bd := range rd.BrokerDatas {
		if m, ok := bd.BrokerAddrs[0]; ok {
			out = append(out, [2]string{bd.BrokerName, m})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no master serves topic %s", ErrNotFound, topic)
	}
	return out, nil
}

// ResetOffset sends INVOKE_BROKER_TO_RESET_OFFSET to one broker and returns its table.
func (a *Admin) ResetOffset(ctx context.Context, addr, topic, group string, ts int64, force bool) (map[route.MessageQueue]int64, error) {
	ext := map[string]string{"topic": topic, "group": group, "timestamp": strconv.FormatInt(ts, 10), "isForce": strconv.FormatBool(force)}
	resp, err := a.Invoke(ctx, addr, remoting.InvokeBrokerToResetOffset, ext, nil)
	if err != nil {
		return nil, err
	}
	table, err := route.DecodeResetOffsetBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reset offset body: %w", ErrServer, addr, err)
	}
	return table, nil
}

// resetStored resets a group's stored offsets queue by queue (INVOKE_BROKER_TO_RESET_OFFSET with
// queueId and offset): each write queue of the topic on the broker goes to the offset of the
// first message at or after ts, only when that is lower than the committed one unless force.
func (a *Admin) resetStored(ctx context.Context, addr, topic, group string, ts int64, force bool) (map[route.MessageQueue]int64, error) {
	rd, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	brokerName, queues := "", 0
	for _, bd := range rd.BrokerDatas {
		for _, a := range bd.BrokerAddrs {
			if a == addr {
				brokerName = bd.BrokerName
			}
		}
	}
	for _, qd := range rd.QueueDatas {
		if qd.BrokerName == brokerName {
			queues = int(qd.WriteQueueNums)
		}
	}
	if brokerName == "" {
		return nil, fmt.Errorf("%w: %s serves no queue of %s", ErrNotFound, addr, topic)
	}
	out := map[route.MessageQueue]int64{}
	for q := 0; q < queues; q++ {
		resp, err := a.Invoke(ctx, addr, remoting.SearchOffsetByTimestamp,
			map[string]string{"topic": topic, "queueId": strconv.Itoa(q), "timestamp": strconv.FormatInt(ts, 10)}, nil)
		if err != nil {
			return out, err
		}
		off, err := offsetExt(addr, resp)
		if err != nil {
			return out, err
		}
		committed, found, err := a.ConsumerOffset(ctx, addr, group, topic, int32(q))
		if err != nil {
			return out, err
		}
		if !found {
			return out, fmt.Errorf("%w: the consumer group <%s> has no offset on %s queue %d", ErrNotFound, group, topic, q)
		}
		if !force && off >= committed {
			off = committed
		}
		ext := map[string]string{"topic": topic, "group": group, "timestamp": strconv.FormatInt(ts, 10),
			"isForce": strconv.FormatBool(force), "queueId": strconv.Itoa(q), "offset": strconv.FormatInt(off, 10)}
		if _, err := a.Invoke(ctx, addr, remoting.InvokeBrokerToResetOffset, ext, nil); err != nil {
			return out, err
		}
		out[route.MessageQueue{Topic: topic, BrokerName: brokerName, QueueID: int32(q)}] = off
	}
	return out, nil
}

var cmdResetOffsetByTime = &command{
	name:    "resetOffsetByTime",
	summary: "move a consumer group's offsets on a topic to a point in time; running consumers follow",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.group, "g", "", "consumer group (required)")
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.timeSpec, "s", "", "time: now, ms since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS (required)")
		fs.StringVar(&o.force, "f", "true", "true: move offsets up as well as down; false: only down")
		fs.StringVar(&o.addr, "addr", "", "reset on this broker (host:port) only")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("g", e.o.group); err != nil {
			return err
		}
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		ts, err := parseResetTime(e.o.timeSpec, e.now())
		if err != nil {
			return err
		}
		force, err := strconv.ParseBool(e.o.force)
		if err != nil {
			return fmt.Errorf("%w: -f %q is not true or false", ErrUsage, e.o.force)
		}
		ms, err := e.admin.topicMasters(ctx, e.o.topic, e.o.addr)
		if err != nil {
			return err
		}
		if !e.o.json {
			fmt.Fprintf(e.stdout, "rollback consumer offset by specified group=%s, topic=%s, force=%t, timestamp(string)=%s, timestamp(long)=%d\n",
				e.o.group, e.o.topic, force, time.UnixMilli(ts).Format("2006-01-02#15:04:05:000"), ts)
		}
		var rows []ResetRow
		var errs []error
		for i, m := range ms {
			if !e.o.json {
				fmt.Fprintf(e.stderr, "[%d/%d] %s %s ... ", i+1, len(ms), m[0], m[1])
			}
			table, err := e.admin.ResetOffset(ctx, m[1], e.o.topic, e.o.group, ts, force)
			var se *serverError
			if errors.As(err, &se) && se.code == remoting.ConsumerNotOnline {
				// As RocketMQ's tool: no consumer to tell, so the stored offsets are set directly
				// (one queue at a time, each an explicit reset the slaves follow).
				if !e.o.json {
					fmt.Fprintf(e.stderr, "no consumer online, setting stored offsets ... ")
				}
				table, err = e.admin.resetStored(ctx, m[1], e.o.topic, e.o.group, ts, force)
			}
			if err != nil {
				if !e.o.json {
					fmt.Fprintf(e.stderr, "failed: %v\n", err)
				}
				errs = append(errs, err)
				continue
			}
			if !e.o.json {
				fmt.Fprintf(e.stderr, "%d queues reset\n", len(table))
			}
			for q, off := range table {
				rows = append(rows, ResetRow{Broker: q.BrokerName, Addr: m[1], QueueID: q.QueueID, Offset: off})
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
				rows = []ResetRow{}
			}
			if err := printJSON(e.stdout, map[string]any{"group": e.o.group, "topic": e.o.topic, "timestamp": ts, "force": force, "offsets": rows}); err != nil {
				return err
			}
		} else {
			var t [][]string
			for _, r := range rows {
				t = append(t, []string{r.Broker, strconv.Itoa(int(r.QueueID)), strconv.FormatInt(r.Offset, 10)})
			}
			if err := table(e.stdout, []string{"BROKER", "QID", "OFFSET"}, t); err != nil {
				return err
			}
		}
		return worst(errs...)
	},
}

var cmdCloneGroupOffset = &command{
	name:    "cloneGroupOffset",
	summary: "copy a consumer group's committed offsets to another group",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.srcGroup, "s", "", "source group (required)")
		fs.StringVar(&o.group, "d", "", "destination group (required)")
		fs.StringVar(&o.topic, "t", "", "topic (required: its route names the brokers)")
		fs.BoolVar(&o.offline, "o", false, "copy even topics an online source group does not subscribe to")
		fs.StringVar(&o.addr, "addr", "", "clone on this broker (host:port) only")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("s", e.o.srcGroup); err != nil {
			return err
		}
		if err := needFlag("d", e.o.group); err != nil {
			return err
		}
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		ms, err := e.admin.topicMasters(ctx, e.o.topic, e.o.addr)
		if err != nil {
			return err
		}
		var errs []error
		done := 0
		for i, m := range ms {
			ext := map[string]string{"srcGroup": e.o.srcGroup, "destGroup": e.o.group, "topic": e.o.topic, "offline": strconv.FormatBool(e.o.offline)}
			if !e.o.json {
				fmt.Fprintf(e.stderr, "[%d/%d] %s %s ... ", i+1, len(ms), m[0], m[1])
			}
			if _, err := e.admin.Invoke(ctx, m[1], remoting.CloneGroupOffset, ext, nil); err != nil {
				if !e.o.json {
					fmt.Fprintf(e.stderr, "failed: %v\n", err)
				}
				errs = append(errs, err)
				continue
			}
			done++
			if !e.o.json {
				fmt.Fprintln(e.stderr, "done")
			}
		}
		if e.o.json {
			if err := printJSON(e.stdout, map[string]any{"srcGroup": e.o.srcGroup, "destGroup": e.o.group, "topic": e.o.topic, "brokers": done}); err != nil {
				return err
			}
		} else if done > 0 {
			fmt.Fprintf(e.stdout, "clone group offset success. srcGroup[%s], destGroup[%s], topic[%s]\n", e.o.srcGroup, e.o.group, e.o.topic)
		}
		return worst(errs...)
	},
}
