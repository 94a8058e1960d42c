package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
)

// printMsgMax bounds how many messages one printMsg prints.
const printMsgMax = 100000

var cmdPrintMsg = &command{
	name:    "printMsg",
	summary: "print the messages of a topic, every queue of every broker group, optionally within a time range",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.subExpr, "s", "*", "tags to print (\"*\" for all, \"a || b\")")
		fs.Int64Var(&o.beginTs, "b", 0, "begin timestamp, ms since the epoch (default: each queue's first message)")
		fs.Int64Var(&o.endTs, "e", 0, "end timestamp, ms since the epoch (default: each queue's end)")
		fs.StringVar(&o.printBody, "d", "true", "print bodies (true|false)")
		fs.IntVar(&o.maxNum, "m", 1000, fmt.Sprintf("most messages to print (at most %d)", printMsgMax))
		fs.StringVar(&o.addr, "addr", "", "read this broker (host:port) instead of every group's master, a slave for instance")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		withBody, err := strconv.ParseBool(e.o.printBody)
		if err != nil {
			return fmt.Errorf("%w: -d %q is not true or false", ErrUsage, e.o.printBody)
		}
		limit := min(max(e.o.maxNum, 1), printMsgMax)
		rd, err := e.admin.TopicRoute(ctx, e.o.topic)
		if err != nil {
			return err
		}
		type target struct {
			broker, addr string
			queues       int
		}
		var targets []target
		for _, qd := range rd.QueueDatas {
			for _, bd := range rd.BrokerDatas {
				if bd.BrokerName != qd.BrokerName {
					continue
				}
				addr := e.o.addr
				if addr == "" {
					addrs, err := e.admin.queryAddrs(ctx, e.o.topic, "", "", bd.BrokerName)
					if err != nil {
						return err
					}
					addr = addrs[0]
				}
				targets = append(targets, target{bd.BrokerName, addr, int(qd.ReadQueueNums)})
			}
		}
		var all []FoundMessage
		truncated := false
	outer:
		for _, tg := range targets {
			done, err := e.admin.toolsSession(ctx, tg.addr, e.o.topic, e.o.subExpr)
			if err != nil {
				return err
			}
			for q := 0; q < tg.queues; q++ {
				from, to, err := e.admin.queueRange(ctx, tg.addr, e.o.topic, q, e.o.beginTs, e.o.endTs)
				if err != nil {
					done()
					return err
				}
				ms, full, err := e.admin.readRange(ctx, tg.addr, e.o.topic, q, from, to, e.o.subExpr, limit-len(all))
				for _, m := range ms {
					if !withBody {
						m.Body = ""
					}
					all = append(all, m)
				}
				if err != nil {
					done()
					return err
				}
				if full {
					truncated = true
					done()
					break outer
				}
			}
			done()
		}
		if e.o.json {
			return printJSON(e.stdout, map[string]any{"messages": nonNil(all), "truncated": truncated})
		}
		var rows [][]string
		for _, m := range all {
			r := []string{m.MsgID, m.Broker, strconv.Itoa(int(m.QueueID)), strconv.FormatInt(m.QueueOffset, 10),
				time.UnixMilli(m.StoreTimestamp).UTC().Format("2006-01-02T15:04:05.000Z"), m.Tags, m.Keys}
			if withBody {
				r = append(r, strconv.Quote(m.Body))
			}
			rows = append(rows, r)
		}
		header := []string{"MSG_ID", "BROKER", "QID", "QUEUE_OFFSET", "STORE_TIME", "TAGS", "KEYS"}
		if withBody {
			header = append(header, "BODY")
		}
		if err := table(e.stdout, header, rows); err != nil {
			return err
		}
		if truncated {
			fmt.Fprintf(e.stderr, "stopped after %d messages (-m)\n", limit)
		}
		return nil
	},
}

// queueRange is the logical offsets [from, to) of a queue within [begin, end] (0: the queue's
// own bounds), found with SEARCH_OFFSET_BY_TIMESTAMP, GET_MIN_OFFSET and GET_MAX_OFFSET.
func (a *Admin) queueRange(ctx context.Context, addr, topic string, qid int, begin, end int64) (int64, int64, error) {
	ask := func(code int32, ts int64) (int64, error) {
		ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(qid)}
		if code == remoting.SearchOffsetByTimestamp {
			ext["timestamp"] = strconv.FormatInt(ts, 10)
		}
		resp, err := a.Invoke(ctx, addr, code, ext, nil)
		if err != nil {
			return 0, err
		}
		return offsetExt(addr, resp)
	}
	var from, to int64
	var err error
	if begin > 0 {
		from, err = ask(remoting.SearchOffsetByTimestamp, begin)
	} else {
		from, err = ask(remoting.GetMinOffset, 0)
	}
	if err != nil {
		return 0, 0, err
	}
	if end > 0 {
		to, err = ask(remoting.SearchOffsetByTimestamp, end)
	} else {
		to, err = ask(remoting.GetMaxOffset, 0)
	}
	return from, to, err
}

// readRange pulls the messages of a queue in [from, to) matching sub, at most room of them; full
// reports that more were there (the caller's limit was reached).
func (a *Admin) readRange(ctx context.Context, addr, topic string, qid int, from, to int64, sub string, room int) ([]FoundMessage, bool, error) {
	var out []FoundMessage
	for off := from; off < to; {
		ms, next, err := a.pull(ctx, addr, topic, qid, off, 32, sub)
		if err != nil {
			return out, false, err
		}
		for _, m := range ms {
			if m.QueueOffset >= to {
				return out, false, nil
			}
			if len(out) >= room {
				return out, true, nil
			}
			out = append(out, m)
		}
		if next <= off {
			break
		}
		off = next
	}
	return out, false, nil
}
