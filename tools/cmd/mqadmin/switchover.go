package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/failover"
)

// switchover flags (this command's own; kept out of opts).
var (
	swConsul string
	swTo     int64
	swWait   time.Duration
)

// cmdSwitchover hands the master role of a failover group (enableFailover=true) to a slave
// through Consul: the master fences writes, waits until the slave holds everything, names it
// the only node allowed to take the lock and releases it. Zero loss; the time it took is
// printed.
var cmdSwitchover = &command{
	name:    "switchover",
	summary: "graceful master switchover of a failover group (Consul)",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.broker, "b", "", "broker name (required)")
		fs.StringVar(&o.cluster, "c", "DefaultCluster", "cluster name")
		fs.StringVar(&swConsul, "consul", os.Getenv("CONSUL_HTTP_ADDR"), "Consul HTTP address (default $CONSUL_HTTP_ADDR)")
		fs.Int64Var(&swTo, "to", 0, "node (slave brokerId) to hand over to; 0 = any in-sync slave")
		fs.DurationVar(&swWait, "wait", 15*time.Second, "how long to wait for the new master")
	},
	run: runSwitchover,
}

// The command table is built in main.go; file order puts this init after it.
func init() { commands = append(commands, cmdSwitchover) }

func runSwitchover(ctx context.Context, e *env) error {
	if err := needFlag("b", e.o.broker); err != nil {
		return err
	}
	if err := needFlag("consul", swConsul); err != nil {
		return err
	}
	client, err := discovery.NewClient(swConsul)
	if err != nil {
		return fmt.Errorf("%w: consul: %v", ErrUsage, err)
	}
	ctx, cancel := context.WithTimeout(ctx, swWait)
	defer cancel()
	res, err := failover.RequestSwitchover(ctx, failover.NewConsul(client), e.o.cluster, e.o.broker, swTo, 10*time.Millisecond, e.now)
	if err != nil {
		switch {
		case errors.Is(err, failover.ErrNotHolder), errors.Is(err, failover.ErrNoCandidate),
			errors.Is(err, failover.ErrCASConflict), errors.Is(err, failover.ErrSwitchoverTimeout):
			return fmt.Errorf("%w: %v", ErrServer, err)
		}
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	if e.o.json {
		return printJSON(e.stdout, map[string]any{
			"cluster": e.o.cluster, "broker": e.o.broker, "from": res.From, "to": res.To,
			"fromEpoch": res.FromEpoch, "toEpoch": res.ToEpoch, "tookMs": res.Took.Milliseconds(),
		})
	}
	return table(e.stdout, []string{"BROKER", "FROM", "TO", "EPOCH", "TOOK"}, [][]string{{
		e.o.broker, "node " + strconv.FormatInt(res.From, 10), "node " + strconv.FormatInt(res.To, 10),
		strconv.FormatInt(res.FromEpoch, 10) + " -> " + strconv.FormatInt(res.ToEpoch, 10), res.Took.Round(time.Millisecond).String(),
	}})
}
