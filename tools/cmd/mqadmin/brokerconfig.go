package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// BrokerConfig is one broker's GET_BROKER_CONFIG.
type BrokerConfig struct {
	Addr       string            `json:"addr"`
	BrokerName string            `json:"brokerName,omitempty"`
	BrokerID   *int64            `json:"brokerId,omitempty"`
	Version    string            `json:"version,omitempty"`
	Config     map[string]string `json:"config,omitempty"`
	Error      string            `json:"error,omitempty"`
}

// configTargets is where the broker config commands go: -b, else the masters of -c and, with
// slaves, their slaves too (Java's getBrokerConfig -c asks both, updateBrokerConfig -c only
// the masters unless -a).
func configTargets(ctx context.Context, e *env, slaves bool) ([]brokerRef, error) {
	switch {
	case e.o.broker != "" && e.o.cluster != "":
		return nil, fmt.Errorf("%w: give -b or -c, not both", ErrUsage)
	case e.o.broker != "":
		return []brokerRef{{Addr: e.o.broker, BrokerID: -1}}, nil
	case e.o.cluster == "":
		return nil, fmt.Errorf("%w: -b broker address or -c cluster required", ErrUsage)
	}
	ci, err := e.admin.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []brokerRef
	for _, b := range brokers(ci, e.o.cluster) {
		if b.BrokerID == route.MasterID || slaves {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no broker in cluster %q", ErrNotFound, e.o.cluster)
	}
	return out, nil
}

var cmdGetBrokerConfig = &command{
	name:    "getBrokerConfig",
	summary: "print a broker's running configuration (secrets masked), or of every broker of a cluster",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.broker, "b", "", "broker address host:port")
		fs.StringVar(&o.cluster, "c", "", "every master and slave of this cluster")
	},
	run: func(ctx context.Context, e *env) error {
		bs, err := configTargets(ctx, e, true)
		if err != nil {
			return err
		}
		var out []BrokerConfig
		var errs []error
		for _, b := range bs {
			c := BrokerConfig{Addr: b.Addr, BrokerName: b.BrokerName}
			if b.BrokerID >= 0 {
				id := b.BrokerID
				c.BrokerID = &id
			}
			resp, err := e.admin.Invoke(ctx, b.Addr, remoting.GetBrokerConfig, nil, nil)
			if err != nil {
				errs = append(errs, err)
				c.Error = err.Error()
			} else {
				c.Version, c.Config = resp.Ext("version"), parseProperties(string(resp.Body))
			}
			out = append(out, c)
		}
		if e.o.json {
			if err := printJSON(e.stdout, out); err != nil {
				return err
			}
			return worst(errs...)
		}
		for _, c := range out {
			switch {
			case c.BrokerID == nil:
				fmt.Fprintf(e.stdout, "============%s============\n", c.Addr)
			case *c.BrokerID == route.MasterID:
				fmt.Fprintf(e.stdout, "============Master: %s============\n", c.Addr)
			default:
				fmt.Fprintf(e.stdout, "============%s Slave %d: %s============\n", c.BrokerName, *c.BrokerID, c.Addr)
			}
			if c.Error != "" {
				fmt.Fprintf(e.stdout, "FAILED: %s\n", c.Error)
				continue
			}
			rows := make([][]string, 0, len(c.Config))
			for _, k := range sortedKeys(c.Config) {
				rows = append(rows, []string{k, "=", c.Config[k]})
			}
			if err := table(e.stdout, []string{"KEY", "", "VALUE"}, rows); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "(config version %s)\n\n", c.Version)
		}
		return worst(errs...)
	},
}

// BrokerConfigResult is one broker's answer to updateBrokerConfig.
type BrokerConfigResult struct {
	Addr   string `json:"addr"`
	OK     bool   `json:"ok"`
	Remark string `json:"remark,omitempty"`
	Error  string `json:"error,omitempty"`
}

var cmdUpdateBrokerConfig = &command{
	name:    "updateBrokerConfig",
	summary: "change a runtime key of a broker's configuration (applied live, written to its -c file)",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.broker, "b", "", "broker address host:port")
		fs.StringVar(&o.cluster, "c", "", "every master of this cluster")
		fs.StringVar(&o.allBrokers, "a", "", "with -c: \"true\" updates the slaves too")
		fs.StringVar(&o.key, "k", "", "config key (required)")
		fs.StringVar(&o.value, "v", "", "config value (required)")
	},
	run: func(ctx context.Context, e *env) error {
		if err := needFlag("k", e.o.key); err != nil {
			return err
		}
		if err := needFlag("v", e.o.value); err != nil {
			return err
		}
		key, value := strings.TrimSpace(e.o.key), strings.TrimSpace(e.o.value)
		if strings.ContainsAny(key+value, "\r\n") {
			return fmt.Errorf("%w: -k and -v cannot hold line breaks", ErrUsage)
		}
		bs, err := configTargets(ctx, e, e.o.allBrokers == "true")
		if err != nil {
			return err
		}
		body := []byte(key + "=" + value + "\n")
		var res []BrokerConfigResult
		var errs []error
		for _, b := range bs {
			resp, err := e.admin.Invoke(ctx, b.Addr, remoting.UpdateBrokerConfig, nil, body)
			r := BrokerConfigResult{Addr: b.Addr, OK: err == nil}
			if err != nil {
				r.Error = err.Error()
				errs = append(errs, err)
			} else {
				r.Remark = resp.Remark
			}
			res = append(res, r)
		}
		if e.o.json {
			if err := printJSON(e.stdout, res); err != nil {
				return err
			}
			return worst(errs...)
		}
		for _, r := range res {
			switch {
			case !r.OK:
				fmt.Fprintf(e.stdout, "update broker config failed, %s: %s\n", r.Addr, r.Error)
			case r.Remark != "":
				fmt.Fprintf(e.stdout, "update broker config success, %s (%s)\n", r.Addr, r.Remark)
			default:
				fmt.Fprintf(e.stdout, "update broker config success, %s\n", r.Addr)
			}
		}
		return worst(errs...)
	},
}
