package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// stringList is a repeatable string flag (queryMsgById's -i).
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// ViewByID reads the message at a CommitLog offset of one broker (VIEW_MESSAGE_BY_ID); none
// when the broker answers QUERY_NOT_FOUND.
func (a *Admin) ViewByID(ctx context.Context, addr string, physOffset int64) ([]FoundMessage, error) {
	resp, err := a.Invoke(ctx, addr, remoting.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(physOffset, 10)}, nil)
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && se.code == remoting.QueryNotFound {
			return nil, nil
		}
		return nil, err
	}
	return decodeFound(addr, resp.Body, true)
}

var cmdQueryMsgByID = &command{
	name:    "queryMsgById",
	summary: "messages by offset message id (store host + CommitLog offset), asked of the broker the id names, printed in full",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.Var(&o.msgIDs, "i", "offset message id (required; repeat -i for more)")
		fs.StringVar(&o.addr, "addr", "", "ask this broker (host:port) instead of the one the id names, a slave for instance")
		fs.StringVar(&o.group, "g", "", "with -d: consumer group whose client consumes the messages again (consumeMessageDirectly)")
		fs.StringVar(&o.clientID, "d", "", "with -g: client id that consumes the messages again, instead of printing them")
	},
	run: func(ctx context.Context, e *env) error {
		if len(e.o.msgIDs) == 0 {
			return fmt.Errorf("%w: -i offsetMsgId is required", ErrUsage)
		}
		if (e.o.group == "") != (e.o.clientID == "") {
			return fmt.Errorf("%w: -g consumerGroup and -d clientId go together", ErrUsage)
		}
		if e.o.clientID != "" {
			return resendDirectly(ctx, e)
		}
		type want struct {
			addr string
			off  int64
		}
		ws := make([]want, 0, len(e.o.msgIDs))
		for _, id := range e.o.msgIDs {
			host, off, err := commitlog.ParseOffsetMsgID(id)
			if err != nil {
				return fmt.Errorf("%w: -i %q: %w", ErrUsage, id, err)
			}
			addr := e.o.addr
			if addr == "" {
				addr = host.String()
			}
			ws = append(ws, want{addr, off})
		}
		var hit []FoundMessage
		var errs []error
		for i, w := range ws {
			ms, err := e.admin.ViewByID(ctx, w.addr, w.off)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if len(ms) == 0 {
				errs = append(errs, fmt.Errorf("%w: no message %s on %s", ErrNotFound, e.o.msgIDs[i], w.addr))
				continue
			}
			hit = append(hit, ms[0])
		}
		if e.o.json {
			if err := printJSON(e.stdout, map[string]any{"messages": nonNil(hit)}); err != nil {
				return err
			}
		} else {
			printFoundDetail(e, hit)
		}
		return worst(errs...)
	},
}

// sendStatus names a SEND_MESSAGE response code as RocketMQ's SendStatus does; "" for codes that
// are not a stored message.
func sendStatus(code int32) string {
	switch code {
	case remoting.Success:
		return "SEND_OK"
	case remoting.FlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case remoting.FlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case remoting.SlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return ""
}

// newUniqKey is a client message id (UNIQ_KEY) of RocketMQ's length, 32 upper-case hex digits:
// pid, ms since the epoch and random bytes, so ids of one run and of different runs differ.
func newUniqKey(now time.Time) string {
	var b [16]byte
	pid := os.Getpid()
	b[0], b[1] = byte(pid>>8), byte(pid)
	ms := uint64(now.UnixMilli())
	for i := 0; i < 6; i++ {
		b[2+i] = byte(ms >> (8 * (5 - i)))
	}
	_, _ = rand.Read(b[8:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// SendResult is one sendMessage outcome, with RocketMQ's SendResult names.
type SendResult struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int    `json:"queueId"`
	SendStatus  string `json:"sendStatus"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	QueueOffset int64  `json:"queueOffset"`
}

// writableQueues lists (brokerName, master address, queue id) of every writable queue of the
// topic's route, restricted to brokerName and queue qid when given (qid < 0: all).
func writableQueues(rd route.TopicRouteData, brokerName string, qid int) []sendTarget {
	var out []sendTarget
	for _, qd := range rd.QueueDatas {
		if !route.IsWriteable(qd.Perm) || (brokerName != "" && qd.BrokerName != brokerName) {
			continue
		}
		var master string
		for _, bd := range rd.BrokerDatas {
			if bd.BrokerName == qd.BrokerName {
				master = bd.BrokerAddrs[0]
			}
		}
		if master == "" {
			continue
		}
		for q := 0; q < int(qd.WriteQueueNums); q++ {
			if qid < 0 || q == qid {
				out = append(out, sendTarget{qd.BrokerName, master, q})
			}
		}
	}
	return out
}

type sendTarget struct {
	broker, addr string
	queue        int
}

var cmdSendMessage = &command{
	name:    "sendMessage",
	summary: "send one message to a writable queue of the topic (or -b/-i one) and print where it went",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.body, "p", "", "message body (required)")
		fs.StringVar(&o.key, "k", "", "message keys (KEYS, space separated)")
		fs.StringVar(&o.tags, "c", "", "message tags (TAGS)")
		fs.StringVar(&o.broker, "b", "", "send to this broker group (brokerName)")
		fs.IntVar(&o.queueID, "i", -1, "send to this queue id")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		if err := needFlag("p", e.o.body); err != nil {
			return err
		}
		rd, err := e.admin.TopicRoute(ctx, e.o.topic)
		if err != nil {
			return err
		}
		ts := writableQueues(rd, e.o.broker, e.o.queueID)
		if len(ts) == 0 {
			return fmt.Errorf("%w: no writable queue of topic %s (broker %q, queue %d)", ErrNotFound, e.o.topic, e.o.broker, e.o.queueID)
		}
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(ts))))
		tg := ts[n.Int64()]
		now := e.now()
		uniq := newUniqKey(now)
		props := map[string]string{"UNIQ_KEY": uniq, "WAIT": "true", "KEYS": e.o.key, "TAGS": e.o.tags}
		ext := map[string]string{
			"producerGroup": "TOOLS_PRODUCER", "topic": e.o.topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"queueId": strconv.Itoa(tg.queue), "sysFlag": "0", "bornTimestamp": strconv.FormatInt(now.UnixMilli(), 10),
			"flag": "0", "properties": string(commitlog.AppendProperties(nil, props)), "reconsumeTimes": "0",
			"unitMode": "false", "batch": "false",
		}
		resp, err := e.admin.Invoke(ctx, tg.addr, remoting.SendMessage, ext, []byte(e.o.body))
		if resp == nil || sendStatus(resp.Code) == "" {
			return err
		}
		res := SendResult{BrokerName: tg.broker, QueueID: tg.queue, SendStatus: sendStatus(resp.Code), MsgID: uniq,
			OffsetMsgID: resp.Ext("msgId")}
		if v, perr := strconv.ParseInt(resp.Ext("queueOffset"), 10, 64); perr == nil {
			res.QueueOffset = v
		}
		if q, perr := strconv.Atoi(resp.Ext("queueId")); perr == nil {
			res.QueueID = q
		}
		if e.o.json {
			return printJSON(e.stdout, res)
		}
		return table(e.stdout, []string{"BROKER_NAME", "QID", "SEND_RESULT", "MSG_ID"},
			[][]string{{res.BrokerName, strconv.Itoa(res.QueueID), res.SendStatus, res.MsgID}})
	},
}

// consumeMessageMax bounds -c of consumeMessage.
const consumeMessageMax = 100000

var cmdConsumeMessage = &command{
	name:    "consumeMessage",
	summary: "pull messages of a topic (or -b/-i one queue) as TOOLS_CONSUMER and print them; no consumer offset is committed",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.broker, "b", "", "only this broker group (brokerName)")
		fs.IntVar(&o.queueID, "i", -1, "only this queue id")
		fs.Int64Var(&o.offset, "o", -1, "start at this queue offset (needs -b and -i; default: each queue's first message, or -s)")
		fs.IntVar(&o.maxNum, "c", 128, fmt.Sprintf("most messages to print (at most %d)", consumeMessageMax))
		fs.StringVar(&o.beginSpec, "s", "", "begin timestamp, ms since the epoch or yyyy-MM-dd#HH:mm:ss:SSS (default: each queue's first message)")
		fs.StringVar(&o.endSpec, "e", "", "end timestamp, ms since the epoch or yyyy-MM-dd#HH:mm:ss:SSS (default: each queue's end)")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		if e.o.offset >= 0 && (e.o.broker == "" || e.o.queueID < 0) {
			return fmt.Errorf("%w: -o offset needs -b brokerName and -i queueId", ErrUsage)
		}
		var begin, end int64
		for _, ts := range []struct {
			name, spec string
			dst        *int64
		}{{"s", e.o.beginSpec, &begin}, {"e", e.o.endSpec, &end}} {
			if ts.spec == "" {
				continue
			}
			v, err := parseResetTime(ts.spec, e.now())
			if err != nil {
				return fmt.Errorf("%w: -%s %q is not ms since the epoch or yyyy-MM-dd#HH:mm:ss:SSS", ErrUsage, ts.name, ts.spec)
			}
			*ts.dst = v
		}
		limit := min(max(e.o.maxNum, 1), consumeMessageMax)
		rd, err := e.admin.TopicRoute(ctx, e.o.topic)
		if err != nil {
			return err
		}
		var all []FoundMessage
		truncated, found := false, false
	outer:
		for _, qd := range rd.QueueDatas {
			if e.o.broker != "" && qd.BrokerName != e.o.broker {
				continue
			}
			addrs, err := e.admin.queryAddrs(ctx, e.o.topic, "", "", qd.BrokerName)
			if err != nil {
				return err
			}
			addr := addrs[0]
			done, err := e.admin.toolsSession(ctx, addr, e.o.topic, "*")
			if err != nil {
				return err
			}
			for q := 0; q < int(qd.ReadQueueNums); q++ {
				if e.o.queueID >= 0 && q != e.o.queueID {
					continue
				}
				found = true
				from, to, err := e.admin.queueRange(ctx, addr, e.o.topic, q, begin, end)
				if err != nil {
					done()
					return err
				}
				if e.o.offset >= 0 {
					from = e.o.offset
				}
				ms, full, err := e.admin.readRange(ctx, addr, e.o.topic, q, from, to, "*", limit-len(all))
				for _, m := range ms {
					m.Broker = qd.BrokerName
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
		if !found {
			return fmt.Errorf("%w: topic %s has no queue %d on broker %q", ErrNotFound, e.o.topic, e.o.queueID, e.o.broker)
		}
		if e.o.json {
			return printJSON(e.stdout, map[string]any{"messages": nonNil(all), "truncated": truncated})
		}
		var rows [][]string
		for _, m := range all {
			rows = append(rows, []string{m.MsgID, m.Broker, strconv.Itoa(int(m.QueueID)), strconv.FormatInt(m.QueueOffset, 10),
				time.UnixMilli(m.StoreTimestamp).UTC().Format("2006-01-02T15:04:05.000Z"), m.Tags, m.Keys, strconv.Quote(m.Body)})
		}
		if err := table(e.stdout, []string{"MSG_ID", "BROKER", "QID", "QUEUE_OFFSET", "STORE_TIME", "TAGS", "KEYS", "BODY"}, rows); err != nil {
			return err
		}
		if truncated {
			fmt.Fprintf(e.stderr, "stopped after %d messages (-c)\n", limit)
		}
		return nil
	},
}
