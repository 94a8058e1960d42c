// Command mqadmin administers a broker group in the style of RocketMQ's mqadmin: it speaks the
// remoting protocol to the name servers and brokers (and reads the brokers' HTTP /status for
// the replication details the runtime info does not carry).
//
//	mqadmin <command> [-n host:port[;host:port]] [--json] [flags]
//
// Tables are aligned for people; --json prints the same data for scripts. Exit codes: 0 ok,
// 1 the operation failed at a server, 2 usage error, 3 a server could not be reached.
//
// haStatus builds one row per broker from the name server's cluster table and each broker's
// GET_BROKER_RUNTIME_INFO: the master's epoch, confirmed offset and in-sync copy count
// ("copies 2" = master plus one slave), each slave's CommitLog max offset and its lag behind
// the master. Whether a given slave is in sync, and its lag in seconds, come from the master's
// view of its slaves: from the runtime info when it carries them, otherwise from the brokers'
// HTTP /status pages named with --http (with only the runtime info, the in-sync count settles
// the common cases). A slave more than 64 KiB behind, or out of sync, gets a progress bar; the
// rate and time left come from two samples (--interval apart, or successive --watch refreshes).
// --check makes any warning (slave missing, disconnected, behind, unreachable) exit 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/tlsconf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// command is one sub-command.
type command struct {
	name    string
	summary string
	// flags adds the command's own flags; the common ones are added by runContext.
	flags func(fs *flag.FlagSet, o *opts)
	run   func(ctx context.Context, e *env) error
}

// opts holds every flag value; each command reads the ones it declared.
type opts struct {
	namesrv   string
	json      bool
	timeout   time.Duration
	topic     string
	group     string
	cluster   string
	broker    string
	readQ     int
	writeQ    int
	perm      int
	order     bool
	retryQ    int
	retryMax  int
	clean     bool
	check     bool
	httpList  string
	watch     bool
	interval  time.Duration
	count     int
	key       string
	addr      string
	beginTs   int64
	endTs     int64
	maxNum    int
	queueID   int
	offset    int64
	showAll   bool
	timeSpec  string
	force     string
	srcGroup  string
	offline   bool
	subExpr   string
	printBody string
	// accessKey and secretKey sign every request (-ak/-sk, else ROCKETMQ_HOME/conf/tools.yml).
	accessKey string
	secretKey string
	// registrationSecretFile signs every request with the cluster registration secret (name
	// servers with ACL off want the admin writes signed so).
	registrationSecretFile string
	namespace              string
	value                  string
	// clientID and jstack are consumerStatus' -i and -s (a client's running info).
	clientID string
	jstack   bool
	// order and level are brokerConsumeStats' -o ("true": ordered topics) and -l (least lag).
	orderOnly string
	level     int64
	// allBrokers is updateBrokerConfig's -a ("true": slaves too), an argument as in Java's tool.
	allBrokers string
	// msgIDs, body and tags are queryMsgById's -i (repeatable), sendMessage's -p and -c.
	msgIDs stringList
	body   string
	tags   string
	// beginSpec and endSpec are consumeMessage's -s and -e (ms or yyyy-MM-dd#HH:mm:ss:SSS).
	beginSpec string
	endSpec   string
}

// env is what a command runs with.
type env struct {
	o      opts
	admin  *Admin
	stdout io.Writer
	stderr io.Writer
	now    func() time.Time
}

var commands []*command

func init() {
	commands = []*command{
		cmdClusterList, cmdTopicList, cmdTopicRoute, cmdUpdateTopic, cmdDeleteTopic,
		cmdConsumerGroupList, cmdUpdateSubGroup, cmdDeleteSubGroup, cmdConsumerProgress,
		cmdHAStatus, cmdBrokerStatus, cmdWipeWritePerm, cmdAddWritePerm, cmdUpdateKvConfig, cmdDeleteKvConfig,
		cmdGetNamesrvConfig, cmdUpdateNamesrvConfig, cmdTopicClusterList,
		cmdQueryMsgByKey, cmdQueryMsgByUniqueKey, cmdQueryMsgByOffset,
		cmdQueryMsgByID, cmdSendMessage, cmdConsumeMessage, cmdConsumeMessageDirectly,
		cmdResetOffsetByTime, cmdCloneGroupOffset, cmdPrintMsg,
		cmdTopicStatus, cmdConsumerStatus, cmdConsumerConnection, cmdProducerConnection,
		cmdGetBrokerConfig, cmdUpdateBrokerConfig, cmdBrokerConsumeStats, cmdStatsAll,
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mqadmin <command> [-n host:port[;host:port]] [--json] [flags]")
	fmt.Fprintln(w, "\ncommands:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "\nWith ACL on the name servers and brokers, sign requests with -ak ACCESS_KEY -sk SECRET_KEY")
	fmt.Fprintln(w, "(admin commands need an admin account); without them the accessKey and secretKey of")
	fmt.Fprintln(w, "$ROCKETMQ_HOME/conf/tools.yml are used when that file exists, as RocketMQ's mqadmin does.")
	fmt.Fprintln(w, "With ACL off, the name servers' admin writes (wipeWritePerm, addWritePerm, updateKvConfig,")
	fmt.Fprintln(w, "deleteKvConfig, deleteTopic, getNamesrvConfig) are signed with -registrationSecretFile FILE.")
	fmt.Fprintln(w, "\nRun 'mqadmin <command> -h' for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 failed at a server, 2 usage error, 3 server unreachable.")
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return ExitUsage
	}
	name := args[0]
	if name == "-h" || name == "--help" || name == "help" {
		usage(stdout)
		return ExitOK
	}
	var cmd *command
	for _, c := range commands {
		if strings.EqualFold(c.name, name) {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "mqadmin: unknown command %q\n\n", name)
		usage(stderr)
		return ExitUsage
	}
	var o opts
	fs := flag.NewFlagSet("mqadmin "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.namesrv, "n", os.Getenv("NAMESRV_ADDR"), "name server address(es), host:port[;host:port] (default $NAMESRV_ADDR)")
	fs.BoolVar(&o.json, "json", false, "print JSON instead of a table")
	fs.DurationVar(&o.timeout, "timeout", 3*time.Second, "timeout of each request")
	tc := tlsconf.DefaultConfig()
	tlsconf.ClientFlags(fs, &tc)
	fs.StringVar(&o.accessKey, "ak", "", "ACL access key signing every request (default: accessKey of $ROCKETMQ_HOME/conf/tools.yml)")
	fs.StringVar(&o.secretKey, "sk", "", "ACL secret key of -ak")
	fs.StringVar(&o.registrationSecretFile, "registrationSecretFile", "", "sign requests with the cluster registration secret in this file (name server admin writes with ACL off)")
	if cmd.flags != nil {
		cmd.flags(fs, &o)
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mqadmin %s: unexpected arguments %q\n", cmd.name, fs.Args())
		return ExitUsage
	}
	cfg := DefaultConfig()
	cfg.Namesrvs = splitAddrs(o.namesrv)
	cfg.Timeout = o.timeout
	if _, err := tc.ApplyFile(); err != nil {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
		return ExitUsage
	}
	var err error
	if cfg.TLS, err = tc.ClientTLS(); err != nil {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
		return ExitUsage
	}
	creds, err := credentials(o, os.Getenv("ROCKETMQ_HOME"))
	if err != nil {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
		return ExitUsage
	}
	cfg.Credentials = creds
	if o.registrationSecretFile != "" {
		if !creds.Empty() {
			fmt.Fprintf(stderr, "mqadmin %s: -registrationSecretFile and ACL credentials (-ak/-sk, tools.yml) do not go together\n", cmd.name)
			return ExitUsage
		}
		if cfg.RegistrationSecret, err = acl.LoadSecret("", o.registrationSecretFile, "registrationSecret", "-registrationSecretFile"); err != nil {
			fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
			return ExitUsage
		}
	}
	admin, err := NewAdmin(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
		return exitCode(err)
	}
	defer admin.Close()
	e := &env{o: o, admin: admin, stdout: stdout, stderr: stderr, now: time.Now}
	if err := cmd.run(ctx, e); err != nil {
		fmt.Fprintf(stderr, "mqadmin %s: %v\n", cmd.name, err)
		return exitCode(err)
	}
	return ExitOK
}

// credentials are the ACL keys of this run: -ak/-sk (both), else the accessKey and secretKey
// of rocketmqHome/conf/tools.yml when that file exists (RocketMQ's tools read the same file),
// else none.
func credentials(o opts, rocketmqHome string) (acl.Credentials, error) {
	if o.accessKey != "" || o.secretKey != "" {
		if o.accessKey == "" || o.secretKey == "" {
			return acl.Credentials{}, fmt.Errorf("%w: -ak and -sk go together", ErrUsage)
		}
		return acl.Credentials{AccessKey: o.accessKey, SecretKey: o.secretKey}, nil
	}
	if rocketmqHome == "" {
		return acl.Credentials{}, nil
	}
	path := filepath.Join(rocketmqHome, "conf", "tools.yml")
	if _, err := os.Stat(path); err != nil {
		return acl.Credentials{}, nil
	}
	c, err := acl.LoadCredentials(path)
	if err != nil {
		return acl.Credentials{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	return c, nil
}

// splitAddrs splits "a:1;b:2" (commas accepted too) into addresses.
func splitAddrs(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// needFlag reports a usage error when a mandatory flag is empty.
func needFlag(flagName, v string) error {
	if v == "" {
		return fmt.Errorf("%w: -%s is required", ErrUsage, flagName)
	}
	return nil
}

// printJSON writes v indented.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows under a header, aligned.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
