package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rmqha/rmqha/libs/remoting"
)

// Name server admin commands, with the names and flags of RocketMQ's mqadmin. Like the Java
// tool, the route and KV changes go to every name server of -n (each keeps its own routes);
// with ACL off the name servers want them signed with the registration secret
// (-registrationSecretFile), with ACL on by an admin account (-ak/-sk).

// NamesrvResult is one name server's answer to a change.
type NamesrvResult struct {
	Namesrv string `json:"namesrv"`
	OK      bool   `json:"ok"`
	Count   *int   `json:"count,omitempty"` // wipeTopicCount / addTopicCount
	Remark  string `json:"remark,omitempty"`
	Error   string `json:"error,omitempty"`
}

// eachNamesrv sends one request to every name server and prints a row per answer.
func eachNamesrv(ctx context.Context, e *env, code int32, ext map[string]string, countKey string) error {
	return eachNamesrvBody(ctx, e, code, ext, nil, countKey)
}

// eachNamesrvBody is eachNamesrv with a request body.
func eachNamesrvBody(ctx context.Context, e *env, code int32, ext map[string]string, body []byte, countKey string) error {
	if len(e.admin.cfg.Namesrvs) == 0 {
		return fmt.Errorf("%w: no name server: set -n host:port or NAMESRV_ADDR", ErrUsage)
	}
	var res []NamesrvResult
	var errs []error
	for _, ns := range e.admin.cfg.Namesrvs {
		resp, err := e.admin.Invoke(ctx, ns, code, ext, body)
		r := NamesrvResult{Namesrv: ns, OK: err == nil}
		if err == nil {
			r.Remark = resp.Remark
		}
		if err != nil {
			r.Error = err.Error()
			errs = append(errs, err)
		} else if countKey != "" {
			n, perr := strconv.Atoi(resp.Ext(countKey))
			if perr == nil {
				r.Count = &n
			}
		}
		res = append(res, r)
	}
	if e.o.json {
		if err := printJSON(e.stdout, res); err != nil {
			return err
		}
	} else {
		header := []string{"NAMESRV", "RESULT"}
		if countKey != "" {
			header = append(header, "TOPICS")
		}
		rows := make([][]string, 0, len(res))
		for _, r := range res {
			result := "OK"
			if r.Remark != "" {
				result += " (" + r.Remark + ")"
			}
			if !r.OK {
				result = "FAILED: " + r.Error
			}
			row := []string{r.Namesrv, result}
			if countKey != "" {
				c := "-"
				if r.Count != nil {
					c = strconv.Itoa(*r.Count)
				}
				row = append(row, c)
			}
			rows = append(rows, row)
		}
		if err := table(e.stdout, header, rows); err != nil {
			return err
		}
	}
	return worst(errs...)
}

func permCommand(name, summary string, code int32, countKey string) *command {
	return &command{
		name:    name,
		summary: summary,
		flags: func(fs *flag.FlagSet, o *opts) {
			fs.StringVar(&o.broker, "b", "", "broker name (required)")
		},
		run: func(ctx context.Context, e *env) error {
			if err := needFlag("b", e.o.broker); err != nil {
				return err
			}
			return eachNamesrv(ctx, e, code, map[string]string{"brokerName": e.o.broker}, countKey)
		},
	}
}

var cmdWipeWritePerm = permCommand("wipeWritePerm", "take write permission of a broker name away in every name server's routes (producers drain it)",
	remoting.WipeWritePermOfBroker, "wipeTopicCount")

var cmdAddWritePerm = permCommand("addWritePerm", "give a broker name write permission back in every name server's routes",
	remoting.AddWritePermOfBroker, "addTopicCount")

var cmdUpdateKvConfig = &command{
	name:    "updateKvConfig",
	summary: "set a KV configuration item on every name server",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.namespace, "s", "", "namespace (required)")
		fs.StringVar(&o.key, "k", "", "key (required)")
		fs.StringVar(&o.value, "v", "", "value (required)")
	},
	run: func(ctx context.Context, e *env) error {
		for _, f := range [][2]string{{"s", e.o.namespace}, {"k", e.o.key}, {"v", e.o.value}} {
			if err := needFlag(f[0], f[1]); err != nil {
				return err
			}
		}
		return eachNamesrv(ctx, e, remoting.PutKVConfig, map[string]string{"namespace": e.o.namespace, "key": e.o.key, "value": e.o.value}, "")
	},
}

var cmdDeleteKvConfig = &command{
	name:    "deleteKvConfig",
	summary: "delete a KV configuration item on every name server",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.namespace, "s", "", "namespace (required)")
		fs.StringVar(&o.key, "k", "", "key (required)")
	},
	run: func(ctx context.Context, e *env) error {
		for _, f := range [][2]string{{"s", e.o.namespace}, {"k", e.o.key}} {
			if err := needFlag(f[0], f[1]); err != nil {
				return err
			}
		}
		return eachNamesrv(ctx, e, remoting.DeleteKVConfig, map[string]string{"namespace": e.o.namespace, "key": e.o.key}, "")
	},
}

var cmdUpdateNamesrvConfig = &command{
	name:    "updateNamesrvConfig",
	summary: "set a configuration key on every name server (written to its config file)",
	flags: func(fs *flag.FlagSet, o *opts) {
		fs.StringVar(&o.key, "k", "", "key (required)")
		fs.StringVar(&o.value, "v", "", "value (required)")
	},
	run: func(ctx context.Context, e *env) error {
		for _, f := range [][2]string{{"k", e.o.key}, {"v", e.o.value}} {
			if err := needFlag(f[0], f[1]); err != nil {
				return err
			}
		}
		if strings.ContainsAny(e.o.key+e.o.value, "\r\n") {
			return fmt.Errorf("%w: -k and -v must be one line each", ErrUsage)
		}
		return eachNamesrvBody(ctx, e, remoting.UpdateNamesrvConfig, nil, []byte(e.o.key+"="+e.o.value+"\n"), "")
	},
}

// NamesrvConfig is one name server's GET_NAMESRV_CONFIG.
type NamesrvConfig struct {
	Namesrv string            `json:"namesrv"`
	Config  map[string]string `json:"config,omitempty"`
	Error   string            `json:"error,omitempty"`
}

var cmdGetNamesrvConfig = &command{
	name:    "getNamesrvConfig",
	summary: "print every name server's configuration (secrets masked)",
	run: func(ctx context.Context, e *env) error {
		if len(e.admin.cfg.Namesrvs) == 0 {
			return fmt.Errorf("%w: no name server: set -n host:port or NAMESRV_ADDR", ErrUsage)
		}
		var out []NamesrvConfig
		var errs []error
		for _, ns := range e.admin.cfg.Namesrvs {
			resp, err := e.admin.Invoke(ctx, ns, remoting.GetNamesrvConfig, nil, nil)
			if err != nil {
				errs = append(errs, err)
				out = append(out, NamesrvConfig{Namesrv: ns, Error: err.Error()})
				continue
			}
			out = append(out, NamesrvConfig{Namesrv: ns, Config: parseProperties(string(resp.Body))})
		}
		if e.o.json {
			if err := printJSON(e.stdout, out); err != nil {
				return err
			}
			return worst(errs...)
		}
		for _, c := range out {
			fmt.Fprintf(e.stdout, "============%s============\n", c.Namesrv)
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
		}
		return worst(errs...)
	},
}

// parseProperties reads "key=value" lines.
func parseProperties(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

// TopicClusterRow is one cluster of topicClusterList.
type TopicClusterRow struct {
	Cluster string   `json:"cluster"`
	Brokers []string `json:"brokers"`
}

var cmdTopicClusterList = &command{
	name:    "topicClusterList",
	summary: "list the clusters (and broker names) a topic is served by",
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
		byCluster := map[string][]string{}
		for _, b := range rd.BrokerDatas {
			byCluster[b.Cluster] = append(byCluster[b.Cluster], b.BrokerName)
		}
		var rows []TopicClusterRow
		for _, c := range sortedKeys(byCluster) {
			names := byCluster[c]
			sort.Strings(names)
			rows = append(rows, TopicClusterRow{Cluster: c, Brokers: names})
		}
		if e.o.json {
			return printJSON(e.stdout, rows)
		}
		trows := make([][]string, 0, len(rows))
		for _, r := range rows {
			trows = append(trows, []string{r.Cluster, strings.Join(r.Brokers, ",")})
		}
		return table(e.stdout, []string{"CLUSTER", "BROKERS"}, trows)
	},
}
