package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// QueueProgress is one queue of consumerProgress.
type QueueProgress struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"` // -1 when the group committed nothing
	Lag            int64  `json:"lag"`
	Error          string `json:"error,omitempty"`
}

// ConsumerProgress is the whole answer of consumerProgress.
type ConsumerProgress struct {
	Group    string          `json:"group"`
	Queues   []QueueProgress `json:"queues"`
	TotalLag int64           `json:"totalLag"`
}

var cmdConsumerProgress = &command{
	name:    "consumerProgress",
	summary: "per queue of a group's topics: broker offset, consumer offset, lag",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.group, "g", "", "consumer group (required)")
		fs.StringVar(&o.topic, "t", "", "only this topic (default: every topic the group committed offsets for)")
		fs.StringVar(&o.cluster, "c", "", "only masters of this cluster")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("g", e.o.group); err != nil {
			return err
		}
		cp, err := consumerProgress(ctx, e.admin, e.o.group, e.o.topic, e.o.cluster)
		if cp == nil {
			return err
		}
		if e.o.json {
			if jerr := printJSON(e.stdout, cp); jerr != nil {
				return jerr
			}
			return err
		}
		var t [][]string
		for _, q := range cp.Queues {
			co := strconv.FormatInt(q.ConsumerOffset, 10)
			if q.ConsumerOffset < 0 {
				co = "-"
			}
			lag := strconv.FormatInt(q.Lag, 10)
			if q.Error != "" {
				lag = "ERROR: " + q.Error
			}
			t = append(t, []string{q.Topic, q.BrokerName, strconv.Itoa(int(q.QueueID)), strconv.FormatInt(q.BrokerOffset, 10), co, lag})
		}
		if terr := table(e.stdout, []string{"TOPIC", "BROKER", "QID", "BROKER_OFFSET", "CONSUMER_OFFSET", "LAG"}, t); terr != nil {
			return terr
		}
		fmt.Fprintf(e.stdout, "\nGroup: %s  Total lag: %d\n", cp.Group, cp.TotalLag)
		return err
	},
}

// groupTopics asks every master for its offset table and returns the topics group has
// committed offsets for.
func groupTopics(ctx context.Context, a *Admin, masters []brokerRef, group string) ([]string, []error) {
	set := map[string]bool{}
	var errs []error
	for _, m := range masters {
		resp, err := a.Invoke(ctx, m.Addr, remoting.GetAllConsumerOffset, nil, nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		snap, err := meta.DecodeConsumerOffsetSnapshot(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: offsets of %s: %w", ErrServer, m.Addr, err))
			continue
		}
		for key := range snap.OffsetTable {
			if i := strings.LastIndexByte(key, '@'); i > 0 && key[i+1:] == group {
				set[key[:i]] = true
			}
		}
	}
	return sortedKeys(set), errs
}

// consumerProgress builds the per-queue table. It returns a partial result with an error when
// some queues could not be read.
func consumerProgress(ctx context.Context, a *Admin, group, topic, cluster string) (*ConsumerProgress, error) {
	var topics []string
	var errs []error
	if topic != "" {
		topics = []string{topic}
	} else {
		ms, err := a.masters(ctx, cluster)
		if err != nil {
			return nil, err
		}
		topics, errs = groupTopics(ctx, a, ms, group)
		if len(topics) == 0 {
			if len(errs) > 0 {
				return nil, worst(errs...)
			}
			return nil, fmt.Errorf("%w: group %s has no committed offsets (give -t to see a topic's queues)", ErrNotFound, group)
		}
	}
	cp := &ConsumerProgress{Group: group, Queues: []QueueProgress{}}
	for _, t := range topics {
		rd, err := a.TopicRoute(ctx, t)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		masterOf := map[string]string{}
		for _, bd := range rd.BrokerDatas {
			masterOf[bd.BrokerName] = bd.MasterAddr()
		}
		qds := append([]route.QueueData(nil), rd.QueueDatas...)
		sort.Slice(qds, func(i, j int) bool { return qds[i].BrokerName < qds[j].BrokerName })
		for _, qd := range qds {
			addr := masterOf[qd.BrokerName]
			for qid := int32(0); qid < qd.ReadQueueNums; qid++ {
				q := QueueProgress{Topic: t, BrokerName: qd.BrokerName, QueueID: qid, ConsumerOffset: -1}
				if addr == "" {
					q.Error = "no master"
					errs = append(errs, fmt.Errorf("%w: broker group %s has no master", ErrServer, qd.BrokerName))
					cp.Queues = append(cp.Queues, q)
					continue
				}
				maxOff, err := a.MaxOffset(ctx, addr, t, qid)
				if err == nil {
					var found bool
					var off int64
					off, found, err = a.ConsumerOffset(ctx, addr, group, t, qid)
					if found {
						q.ConsumerOffset = off
					}
				}
				q.BrokerOffset = maxOff
				if err != nil {
					q.Error = err.Error()
					errs = append(errs, err)
				} else {
					q.Lag = max(0, maxOff-max(0, q.ConsumerOffset))
					cp.TotalLag += q.Lag
				}
				cp.Queues = append(cp.Queues, q)
			}
		}
	}
	return cp, worst(errs...)
}
