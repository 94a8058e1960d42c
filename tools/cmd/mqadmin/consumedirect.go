package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// consumeMessageDirectly hands one stored message to one consumer's listener, as RocketMQ's
// admin does (DefaultMQAdminExt.consumeMessageDirectly): CONSUME_MESSAGE_DIRECTLY (309)
// {consumerGroup, clientId, msgId} goes to the broker that stores the message (the host of
// the offset message id, or -addr), which reads it and forwards it to the client over the
// client's own connection; the client consumes it and answers a ConsumeMessageDirectlyResult.
// The consumer must be connected to that broker (it is when it consumes the message's topic
// there). The message is consumed again whatever its consumer offset; nothing about offsets
// changes.

// directTimeout bounds one CONSUME_MESSAGE_DIRECTLY: the broker waits up to 10 s for the
// client, so -timeout × 3 as Java's admin, and never less than that wait.
func directTimeout(e *env) time.Duration { return max(3*e.o.timeout, 12*time.Second) }

// DirectResult is one consumeMessageDirectly answer, as printed.
type DirectResult struct {
	MsgID          string `json:"msgId"`
	Broker         string `json:"broker"`
	Order          bool   `json:"order"`
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult"`
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

// ConsumeDirectly asks the broker at addr to hand the message offsetMsgID to the client.
func (a *Admin) ConsumeDirectly(ctx context.Context, timeout time.Duration, addr, group, clientID, offsetMsgID string) (DirectResult, error) {
	ext := map[string]string{"consumerGroup": group, "clientId": clientID, "msgId": offsetMsgID}
	resp, err := a.InvokeWithin(ctx, timeout, addr, remoting.ConsumeMessageDirectly, ext, nil)
	if err != nil {
		return DirectResult{}, err
	}
	r, err := route.DecodeConsumeMessageDirectlyResult(resp.Body)
	if err != nil {
		return DirectResult{}, fmt.Errorf("%w: answer of %s through %s: %w", ErrServer, clientID, addr, err)
	}
	return DirectResult{MsgID: offsetMsgID, Broker: addr, Order: r.Order, AutoCommit: r.AutoCommit, ConsumeResult: r.ConsumeResult,
		Remark: r.Remark, SpentTimeMills: r.SpentTimeMills}, nil
}

// directAddr is the broker a consume-directly of id goes to: -addr, else the id's store host.
func directAddr(e *env, id string) (string, error) {
	host, _, err := commitlog.ParseOffsetMsgID(id)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %w", ErrUsage, id, err)
	}
	if e.o.addr != "" {
		return e.o.addr, nil
	}
	return host.String(), nil
}

func printDirect(e *env, rs []DirectResult) error {
	if e.o.json {
		if rs == nil {
			rs = []DirectResult{}
		}
		return printJSON(e.stdout, map[string]any{"results": rs})
	}
	var t [][]string
	for _, r := range rs {
		t = append(t, []string{r.MsgID, r.Broker, strconv.FormatBool(r.Order), strconv.FormatBool(r.AutoCommit), r.ConsumeResult,
			orNull(r.Remark), strconv.FormatInt(r.SpentTimeMills, 10)})
	}
	return table(e.stdout, []string{"MSG_ID", "BROKER", "ORDER", "AUTO_COMMIT", "CONSUME_RESULT", "REMARK", "SPENT_MS"}, t)
}

func orNull(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

var cmdConsumeMessageDirectly = &command{
	name:    "consumeMessageDirectly",
	summary: "hand one stored message to one consumer's listener through its broker and print how it consumed it",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.group, "g", "", "consumer group (required)")
		fs.StringVar(&o.clientID, "i", "", "client id of the consumer (consumerConnection lists them; required)")
		fs.StringVar(&o.key, "m", "", "offset message id (or use -t, -b, -q and -o)")
		fs.StringVar(&o.topic, "t", "", "topic of the message at -b/-q/-o")
		fs.StringVar(&o.broker, "b", "", "broker group (brokerName) of the message at -q/-o")
		fs.IntVar(&o.queueID, "q", -1, "queue id of the message")
		fs.Int64Var(&o.offset, "o", -1, "queue offset of the message")
		fs.StringVar(&o.addr, "addr", "", "ask this broker (host:port) instead of the one the message is on")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("g", e.o.group); err != nil {
			return err
		}
		if err := needFlag("i", e.o.clientID); err != nil {
			return err
		}
		id := e.o.key
		switch {
		case id != "" && (e.o.topic != "" || e.o.queueID >= 0 || e.o.offset >= 0):
			return fmt.Errorf("%w: -m or -t/-b/-q/-o, not both", ErrUsage)
		case id == "":
			if e.o.topic == "" || (e.o.broker == "" && e.o.addr == "") || e.o.queueID < 0 || e.o.offset < 0 {
				return fmt.Errorf("%w: -m offsetMsgId, or -t topic -b brokerName -q queueId -o offset, is required", ErrUsage)
			}
			addrs, err := e.admin.queryAddrs(ctx, e.o.topic, e.o.addr, "", e.o.broker)
			if err != nil {
				return err
			}
			ms, err := e.admin.PullOne(ctx, addrs[0], e.o.topic, e.o.queueID, e.o.offset)
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				return fmt.Errorf("%w: no message at %s:%d offset %d", ErrNotFound, e.o.topic, e.o.queueID, e.o.offset)
			}
			id = ms[0].OffsetMsgID
			if e.o.addr == "" {
				e.o.addr = addrs[0]
			}
		}
		addr, err := directAddr(e, id)
		if err != nil {
			return err
		}
		r, err := e.admin.ConsumeDirectly(ctx, directTimeout(e), addr, e.o.group, e.o.clientID, id)
		if err != nil {
			return err
		}
		return printDirect(e, []DirectResult{r})
	},
}

// resendDirectly is queryMsgById -g -d: every -i consumed again by the client, as Java's tool.
func resendDirectly(ctx context.Context, e *env) error {
	var rs []DirectResult
	var errs []error
	for _, id := range e.o.msgIDs {
		addr, err := directAddr(e, id)
		if err != nil {
			return err
		}
		r, err := e.admin.ConsumeDirectly(ctx, directTimeout(e), addr, e.o.group, e.o.clientID, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rs = append(rs, r)
	}
	if err := printDirect(e, rs); err != nil {
		return err
	}
	return worst(errs...)
}
