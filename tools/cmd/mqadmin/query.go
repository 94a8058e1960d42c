package main

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
)

// FoundMessage is one message a query returned, as queryMsgByKey, queryMsgByUniqueKey and
// queryMsgByOffset print it.
type FoundMessage struct {
	Broker         string            `json:"broker"`
	MsgID          string            `json:"msgId"`
	OffsetMsgID    string            `json:"offsetMsgId"`
	Topic          string            `json:"topic"`
	QueueID        int32             `json:"queueId"`
	QueueOffset    int64             `json:"queueOffset"`
	CommitLogOff   int64             `json:"commitLogOffset"`
	Tags           string            `json:"tags,omitempty"`
	Keys           string            `json:"keys,omitempty"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	StoreTimestamp int64             `json:"storeTimestamp"`
	BornHost       string            `json:"bornHost"`
	StoreHost      string            `json:"storeHost"`
	SysFlag        int32             `json:"sysFlag"`
	Properties     map[string]string `json:"properties"`
	BodyLen        int               `json:"bodyLength"`
	Body           string            `json:"body,omitempty"`
}

// maxBodyShown bounds the body text printed per message.
const maxBodyShown = 4096

// decodeFound splits a QUERY_MESSAGE (or VIEW_MESSAGE_BY_ID, PULL_MESSAGE) body into messages.
func decodeFound(broker string, body []byte, withBody bool) ([]FoundMessage, error) {
	var out []FoundMessage
	for len(body) > 0 {
		r, n, err := commitlog.DecodeRecord(body)
		if err != nil {
			return out, fmt.Errorf("%w: %s: message %d of the answer: %w", ErrServer, broker, len(out), err)
		}
		body = body[n:]
		if r.IsBlank() {
			continue
		}
		p := commitlog.ParseProperties(r.Properties)
		m := FoundMessage{Broker: broker, MsgID: p["UNIQ_KEY"], OffsetMsgID: commitlog.OffsetMsgID(r.StoreHost, r.PhysicalOffset),
			Topic: r.Topic, QueueID: r.QueueID, QueueOffset: r.QueueOffset, CommitLogOff: r.PhysicalOffset,
			Tags: p["TAGS"], Keys: p["KEYS"], ReconsumeTimes: r.ReconsumeTimes, BornTimestamp: r.BornTimestamp,
			StoreTimestamp: r.StoreTimestamp, BornHost: r.BornHost.String(), StoreHost: r.StoreHost.String(),
			SysFlag: r.SysFlag, Properties: p}
		if m.MsgID == "" {
			m.MsgID = m.OffsetMsgID
		}
		b := r.Body
		if r.SysFlag&1 != 0 { // compressed by the producer (zlib)
			if zr, err := zlib.NewReader(bytes.NewReader(b)); err == nil {
				if d, err := io.ReadAll(io.LimitReader(zr, maxBodyShown+1)); err == nil {
					b = d
				}
			}
		}
		m.BodyLen = len(r.Body)
		if withBody {
			if len(b) > maxBodyShown {
				b = b[:maxBodyShown]
			}
			if utf8.Valid(b) {
				m.Body = string(b)
			} else {
				m.Body = fmt.Sprintf("%x", b)
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// QueryMessage sends QUERY_MESSAGE to one broker; a QUERY_NOT_FOUND answer is no messages.
func (a *Admin) QueryMessage(ctx context.Context, addr, topic, key string, maxNum int, begin, end int64, unique bool) ([]FoundMessage, error) {
	ext := map[string]string{"topic": topic, "key": key, "maxNum": strconv.Itoa(maxNum),
		"beginTimestamp": strconv.FormatInt(begin, 10), "endTimestamp": strconv.FormatInt(end, 10)}
	if unique {
		ext["_UNIQUE_KEY_QUERY"] = "true"
	}
	resp, err := a.Invoke(ctx, addr, remoting.QueryMessage, ext, nil)
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && se.code == remoting.QueryNotFound {
			return nil, nil
		}
		return nil, err
	}
	return decodeFound(addr, resp.Body, true)
}

// queryAddrs is where a topic's messages are asked for: --addr given, or per broker group of the
// topic's route its master, else its lowest-numbered slave (RocketMQ's selectBrokerAddr).
func (a *Admin) queryAddrs(ctx context.Context, topic, addr, cluster, brokerName string) ([]string, error) {
	if addr != "" {
		return []string{addr}, nil
	}
	rd, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, bd := range rd.BrokerDatas {
		if (brokerName != "" && bd.BrokerName != brokerName) || (cluster != "" && bd.Cluster != cluster) {
			continue
		}
		if m, ok := bd.BrokerAddrs[0]; ok {
			out = append(out, m)
			continue
		}
		ids := make([]int64, 0, len(bd.BrokerAddrs))
		for id := range bd.BrokerAddrs {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		if len(ids) > 0 {
			out = append(out, bd.BrokerAddrs[ids[0]])
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no broker serves topic %s", ErrNotFound, topic)
	}
	sort.Strings(out)
	return out, nil
}

// queryAll asks every address and merges the answers (oldest first); unreachable brokers are
// reported after the others answered.
func (e *env) queryAll(ctx context.Context, addrs []string, key string, maxNum int, begin, end int64, unique bool) ([]FoundMessage, error) {
	var all []FoundMessage
	var errs []error
	for _, addr := range addrs {
		ms, err := e.admin.QueryMessage(ctx, addr, e.o.topic, key, maxNum, begin, end, unique)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all = append(all, ms...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].StoreTimestamp < all[j].StoreTimestamp })
	return all, worst(errs...)
}

func printFoundTable(e *env, ms []FoundMessage) error {
	var rows [][]string
	for _, m := range ms {
		rows = append(rows, []string{m.MsgID, m.Broker, strconv.Itoa(int(m.QueueID)), strconv.FormatInt(m.QueueOffset, 10),
			time.UnixMilli(m.StoreTimestamp).UTC().Format("2006-01-02T15:04:05.000Z"), m.Keys, m.Tags})
	}
	return table(e.stdout, []string{"MSG_ID", "BROKER", "QID", "QUEUE_OFFSET", "STORE_TIME", "KEYS", "TAGS"}, rows)
}

func printFoundDetail(e *env, ms []FoundMessage) {
	for i, m := range ms {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		kv := [][2]string{
			{"Broker", m.Broker}, {"Topic", m.Topic}, {"Tags", "[" + m.Tags + "]"}, {"Keys", "[" + m.Keys + "]"},
			{"Queue ID", strconv.Itoa(int(m.QueueID))}, {"Queue Offset", strconv.FormatInt(m.QueueOffset, 10)},
			{"CommitLog Offset", strconv.FormatInt(m.CommitLogOff, 10)}, {"Reconsume Times", strconv.Itoa(int(m.ReconsumeTimes))},
			{"Born Timestamp", time.UnixMilli(m.BornTimestamp).UTC().Format(time.RFC3339Nano)},
			{"Store Timestamp", time.UnixMilli(m.StoreTimestamp).UTC().Format(time.RFC3339Nano)},
			{"Born Host", m.BornHost}, {"Store Host", m.StoreHost}, {"System Flag", strconv.Itoa(int(m.SysFlag))},
			{"Properties", propsString(m.Properties)}, {"Message ID", m.MsgID}, {"Offset Message ID", m.OffsetMsgID},
			{"Body Length", strconv.Itoa(m.BodyLen)}, {"Body", m.Body},
		}
		for _, p := range kv {
			fmt.Fprintf(e.stdout, "%-20s %s\n", p[0]+":", p[1])
		}
	}
}

func propsString(p map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(p) {
		parts = append(parts, k+"="+p[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// timeRange reads -b and -e (ms since the epoch; 0 and now+1h when unset).
func timeRange(e *env) (int64, int64) {
	end := e.o.endTs
	if end == 0 {
		end = e.now().Add(time.Hour).UnixMilli()
	}
	return e.o.beginTs, end
}

var cmdQueryMsgByKey = &command{
	name:    "queryMsgByKey",
	summary: "messages of a topic carrying a key (KEYS), from every broker group's master (or --addr one broker)",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.key, "k", "", "message key (required)")
		fs.Int64Var(&o.beginTs, "b", 0, "begin timestamp, ms since the epoch (default 0)")
		fs.Int64Var(&o.endTs, "e", 0, "end timestamp, ms since the epoch (default now + 1h)")
		fs.IntVar(&o.maxNum, "m", 64, "most messages per broker (the broker caps it at 64)")
		fs.StringVar(&o.cluster, "c", "", "only the broker groups of this cluster")
		fs.StringVar(&o.addr, "addr", "", "ask only this broker (host:port), a slave for instance")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		if err := needFlag("k", e.o.key); err != nil {
			return err
		}
		addrs, err := e.admin.queryAddrs(ctx, e.o.topic, e.o.addr, e.o.cluster, "")
		if err != nil {
			return err
		}
		begin, end := timeRange(e)
		ms, qerr := e.queryAll(ctx, addrs, e.o.key, e.o.maxNum, begin, end, false)
		if e.o.json {
			if err := printJSON(e.stdout, map[string]any{"messages": nonNil(ms)}); err != nil {
				return err
			}
		} else if err := printFoundTable(e, ms); err != nil {
			return err
		}
		if qerr != nil {
			return qerr
		}
		if len(ms) == 0 {
			return fmt.Errorf("%w: no message of topic %s has key %q", ErrNotFound, e.o.topic, e.o.key)
		}
		return nil
	},
}

var cmdQueryMsgByUniqueKey = &command{
	name:    "queryMsgByUniqueKey",
	summary: "a message by its client message id (UNIQ_KEY), printed in full",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.key, "i", "", "message id (UNIQ_KEY, required)")
		fs.BoolVar(&o.showAll, "a", false, "print every message with the id (at most 32), not only the first")
		fs.StringVar(&o.cluster, "c", "", "only the broker groups of this cluster")
		fs.StringVar(&o.addr, "addr", "", "ask only this broker (host:port), a slave for instance")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		if err := needFlag("i", e.o.key); err != nil {
			return err
		}
		addrs, err := e.admin.queryAddrs(ctx, e.o.topic, e.o.addr, e.o.cluster, "")
		if err != nil {
			return err
		}
		ms, qerr := e.queryAll(ctx, addrs, e.o.key, 32, 0, math.MaxInt64, true)
		var hit []FoundMessage
		for _, m := range ms {
			if m.Properties["UNIQ_KEY"] == e.o.key && (e.o.showAll || len(hit) == 0) {
				hit = append(hit, m)
			}
		}
		if e.o.json {
			if err := printJSON(e.stdout, map[string]any{"messages": nonNil(hit)}); err != nil {
				return err
			}
		} else {
			printFoundDetail(e, hit)
		}
		if qerr != nil {
			return qerr
		}
		if len(hit) == 0 {
			return fmt.Errorf("%w: no message of topic %s has id %s", ErrNotFound, e.o.topic, e.o.key)
		}
		return nil
	},
}

func nonNil(ms []FoundMessage) []FoundMessage {
	if ms == nil {
		return []FoundMessage{}
	}
	return ms
}

// toolsConsumerGroup is the group queryMsgByOffset pulls as (RocketMQ's TOOLS_CONSUMER).
const toolsConsumerGroup = "TOOLS_CONSUMER"

// toolsSession registers TOOLS_CONSUMER on a broker with a subscription to topic (what a pull
// needs, as RocketMQ's tools use a pull consumer) and returns the function that unregisters it.
func (a *Admin) toolsSession(ctx context.Context, addr, topic, sub string) (func(), error) {
	clientID := fmt.Sprintf("mqadmin@%d", os.Getpid())
	hb, err := json.Marshal(map[string]any{
		"clientID": clientID, "producerDataSet": []any{},
		"consumerDataSet": []any{map[string]any{
			"groupName": toolsConsumerGroup, "consumeType": "CONSUME_ACTIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "unitMode": false,
			"subscriptionDataSet": []any{map[string]any{"classFilterMode": false, "topic": topic, "subString": sub,
				"tagsSet": []string{}, "codeSet": []int{}, "subVersion": 0, "expressionType": "TAG"}},
		}},
	})
	if err != nil {
		return nil, err
	}
	if _, err := a.Invoke(ctx, addr, remoting.HeartBeat, nil, hb); err != nil {
		return nil, err
	}
	return func() {
		_, _ = a.Invoke(context.Background(), addr, remoting.UnregisterClient,
			map[string]string{"clientID": clientID, "consumerGroup": toolsConsumerGroup}, nil)
	}, nil
}

// pull reads up to n messages of a queue from offset with subscription sub (tags, "*" for all)
// and returns them with the offset to continue at; none (and next = offset) when the queue holds
// nothing there.
func (a *Admin) pull(ctx context.Context, addr, topic string, qid int, offset int64, n int, sub string) ([]FoundMessage, int64, error) {
	ext := map[string]string{
		"consumerGroup": toolsConsumerGroup, "topic": topic, "queueId": strconv.Itoa(qid),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": strconv.Itoa(n), "sysFlag": "2",
		"commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": sub,
		"subVersion": "0", "expressionType": "TAG",
	}
	resp, err := a.Invoke(ctx, addr, remoting.PullMessage, ext, nil)
	next := offset
	if resp != nil {
		if v, perr := strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64); perr == nil {
			next = v
		}
	}
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && (se.code == remoting.PullNotFound || se.code == remoting.PullOffsetMoved || se.code == remoting.PullRetryImmediately) {
			return nil, next, nil
		}
		return nil, next, err
	}
	ms, err := decodeFound(addr, resp.Body, true)
	return ms, next, err
}

// PullOne pulls the message at a queue offset as TOOLS_CONSUMER; nil when the queue holds
// nothing there.
func (a *Admin) PullOne(ctx context.Context, addr, topic string, qid int, offset int64) ([]FoundMessage, error) {
	done, err := a.toolsSession(ctx, addr, topic, "*")
	if err != nil {
		return nil, err
	}
	defer done()
	ms, _, err := a.pull(ctx, addr, topic, qid, offset, 1, "*")
	if len(ms) > 1 {
		ms = ms[:1]
	}
	return ms, err
}

var cmdQueryMsgByOffset = &command{
	name:    "queryMsgByOffset",
	summary: "the message at a queue offset of one broker group, printed in full",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.topic, "t", "", "topic (required)")
		fs.StringVar(&o.broker, "b", "", "broker group (brokerName, required)")
		fs.IntVar(&o.queueID, "i", -1, "queue id (required)")
		fs.Int64Var(&o.offset, "o", -1, "queue offset (required)")
		fs.StringVar(&o.addr, "addr", "", "ask this broker (host:port) instead of the group's master, a slave for instance")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("t", e.o.topic); err != nil {
			return err
		}
		if e.o.addr == "" {
			if err := needFlag("b", e.o.broker); err != nil {
				return err
			}
		}
		if e.o.queueID < 0 || e.o.offset < 0 {
			return fmt.Errorf("%w: -i queueId and -o offset are required", ErrUsage)
		}
		addrs, err := e.admin.queryAddrs(ctx, e.o.topic, e.o.addr, "", e.o.broker)
		if err != nil {
			return err
		}
		ms, err := e.admin.PullOne(ctx, addrs[0], e.o.topic, e.o.queueID, e.o.offset)
		if err != nil {
			return err
		}
		if e.o.json {
			if err := printJSON(e.stdout, map[string]any{"messages": nonNil(ms)}); err != nil {
				return err
			}
		} else {
			printFoundDetail(e, ms)
		}
		if len(ms) == 0 {
			return fmt.Errorf("%w: no message at %s:%d offset %d", ErrNotFound, e.o.topic, e.o.queueID, e.o.offset)
		}
		return nil
	},
}
