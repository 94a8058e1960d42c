package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/tlsconf"
)

// Send modes (-mode).
const (
	ModeSync   = "sync"
	ModeAsync  = "async"
	ModeOneway = "oneway"
)

// Client kinds (-client).
const (
	ClientGo  = "go"  // rocketmq-client-go/v2 producer and push consumer
	ClientRaw = "raw" // lean remoting frames
)

// ErrInvalidConfig is returned by Config.Validate for a field out of range.
var ErrInvalidConfig = errors.New("invalid config")

// Config is one benchmark run.
type Config struct {
	// TLS holds the client TLS keys (-tls.enable, -tls.client.*; RMQ_TLS_* variables). With
	// -client go, rocketmq-client-go's WithTls is used, which never verifies the server.
	TLS tlsconf.Config
	// tlsClient is TLS built by Run (nil: plain).
	tlsClient *tls.Config
	// Namesrv lists name server addresses, ';'-separated. Default "127.0.0.1:9876".
	Namesrv string
	// Topic is produced to and consumed from; created with Queues queues when missing.
	// Default "BenchTopic".
	Topic string
	// Queues is the queue count of a topic the tool creates. Default 8.
	Queues int
	// N is the number of messages to produce (0: no limit, run for Duration). With no producers
	// it is the number to consume. Default 0.
	N int
	// Size is the message body size in bytes (at least 16: a run id and a timestamp). Default 1024.
	Size int
	// Producers is the number of concurrent producer clients. Default 1.
	Producers int
	// Consumers is the number of concurrent consumer clients of one group. Default 1.
	Consumers int
	// Mode is sync, async or oneway. Default sync.
	Mode string
	// Inflight bounds unanswered async sends per producer. Default 256.
	Inflight int
	// Duration bounds producing (and consuming when nothing is produced); 0 with N > 0 means
	// until N are sent. Default 10s.
	Duration time.Duration
	// Drain is how long consumers may take after producing stops. Default 30s.
	Drain time.Duration
	// Client is go (rocketmq-client-go) or raw (lean remoting frames). Default go.
	Client string
	// PullFrom is master or slave: where raw consumers pull. Default master.
	PullFrom string
	// Keys gives every message a KEYS key and (raw frames; the Go client always sends one) a
	// UNIQ_KEY, both unique per message: what the broker's message index stores. Default false.
	Keys bool
	// Group is the consumer group; empty means a fresh group per run. Default "".
	Group string
	// SendTimeout bounds one send. Default 3s.
	SendTimeout time.Duration
	// Progress is the period of progress lines; 0 disables them. Default 1s.
	Progress time.Duration
	// AccessKey and SecretKey sign every request (RocketMQ ACL): the Go clients with
	// WithCredentials, the raw frames and the set-up requests with the same signature. Topic
	// creation needs an admin account. Default none.
	AccessKey, SecretKey string
	// RegistrationSecretFile signs the set-up requests (topic creation) with the cluster
	// registration secret under access key rmqha-broker, as a broker with ACL off wants its
	// admin writes signed (mqadmin -registrationSecretFile). Not with -ak/-sk. Default "".
	RegistrationSecretFile string
	// CPUPids names processes whose CPU time per sent message is reported, "name=pid,..."
	// (for example the master and the slave of the group under test). Default "": only the
	// bench process itself.
	CPUPids string
}

// DefaultConfig returns the defaults described on Config.
func DefaultConfig() Config {
	return Config{
		Namesrv: "127.0.0.1:9876", Topic: "BenchTopic", Queues: 8, Size: 1024, Producers: 1, Consumers: 1,
		Mode: ModeSync, Inflight: 256, Duration: 10 * time.Second, Drain: 30 * time.Second,
		Client: ClientGo, PullFrom: "master", SendTimeout: 3 * time.Second, Progress: time.Second,
		TLS: tlsconf.DefaultConfig(),
	}
}

func (c *Config) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Namesrv, "namesrv", c.Namesrv, "name server addresses, ';'-separated")
	fs.StringVar(&c.Topic, "topic", c.Topic, "topic (created when missing)")
	fs.IntVar(&c.Queues, "queues", c.Queues, "queue count of a topic the tool creates")
	fs.IntVar(&c.N, "n", c.N, "messages to produce (0: run for -duration); with -producers 0, messages to consume")
	fs.IntVar(&c.Size, "size", c.Size, "message body size in bytes (>= 16)")
	fs.IntVar(&c.Producers, "producers", c.Producers, "concurrent producer clients")
	fs.IntVar(&c.Consumers, "consumers", c.Consumers, "concurrent consumer clients (one group)")
	fs.StringVar(&c.Mode, "mode", c.Mode, "send mode: sync, async or oneway")
	fs.IntVar(&c.Inflight, "inflight", c.Inflight, "unanswered async sends per producer")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long to produce (0 with -n: until n are sent)")
	fs.DurationVar(&c.Drain, "drain", c.Drain, "how long consumers may take after producing stops")
	fs.StringVar(&c.Client, "client", c.Client, "go (rocketmq-client-go) or raw (lean remoting frames)")
	fs.StringVar(&c.PullFrom, "pull-from", c.PullFrom, "raw consumers pull from master or slave")
	fs.BoolVar(&c.Keys, "keys", c.Keys, "every message carries a unique KEYS key and UNIQ_KEY (what the message index stores)")
	fs.StringVar(&c.Group, "group", c.Group, "consumer group (default: a fresh group per run)")
	fs.DurationVar(&c.SendTimeout, "send-timeout", c.SendTimeout, "timeout of one send")
	fs.DurationVar(&c.Progress, "progress", c.Progress, "progress line period (0: none)")
	tlsconf.ClientFlags(fs, &c.TLS)
	fs.StringVar(&c.AccessKey, "ak", c.AccessKey, "ACL access key signing every request (with -sk)")
	fs.StringVar(&c.SecretKey, "sk", c.SecretKey, "ACL secret key of -ak")
	fs.StringVar(&c.RegistrationSecretFile, "registrationSecretFile", c.RegistrationSecretFile, "sign topic creation with the cluster registration secret in this file (brokers with ACL off)")
	fs.StringVar(&c.CPUPids, "cpu-pids", c.CPUPids, "report CPU µs per sent message of these processes too: name=pid,...")
}

// Validate names the first invalid field.
func (c Config) Validate() error {
	bad := func(f string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(f, args...))
	}
	switch {
	case strings.TrimSpace(c.Namesrv) == "":
		return bad("-namesrv is empty")
	case c.Topic == "":
		return bad("-topic is empty")
	case c.Queues < 1 || c.Queues > 1024:
		return bad("-queues %d not in [1, 1024]", c.Queues)
	case c.N < 0:
		return bad("-n %d < 0", c.N)
	case c.Size < 16 || c.Size > 4<<20:
		return bad("-size %d not in [16, 4 MiB]", c.Size)
	case c.Producers < 0 || c.Consumers < 0 || c.Producers+c.Consumers == 0:
		return bad("-producers %d / -consumers %d: need at least one client, none negative", c.Producers, c.Consumers)
	case c.Mode != ModeSync && c.Mode != ModeAsync && c.Mode != ModeOneway:
		return bad("-mode %q is not sync, async or oneway", c.Mode)
	case c.Inflight < 1:
		return bad("-inflight %d < 1", c.Inflight)
	case c.Duration < 0 || (c.Duration == 0 && c.N == 0):
		return bad("-duration %v: give a positive duration or -n", c.Duration)
	case c.Drain < 0:
		return bad("-drain %v < 0", c.Drain)
	case c.Client != ClientGo && c.Client != ClientRaw:
		return bad("-client %q is not go or raw", c.Client)
	case c.PullFrom != "master" && c.PullFrom != "slave":
		return bad("-pull-from %q is not master or slave", c.PullFrom)
	case c.PullFrom == "slave" && c.Client != ClientRaw && c.Consumers > 0:
		return bad("-pull-from slave needs -client raw (the Go client pulls where the broker suggests)")
	case c.SendTimeout <= 0:
		return bad("-send-timeout %v <= 0", c.SendTimeout)
	case c.Progress < 0:
		return bad("-progress %v < 0", c.Progress)
	case (c.AccessKey == "") != (c.SecretKey == ""):
		return bad("-ak and -sk go together")
	case c.RegistrationSecretFile != "" && c.AccessKey != "":
		return bad("-registrationSecretFile and -ak/-sk do not go together")
	}
	if _, err := parsePids(c.CPUPids); err != nil {
		return bad("-cpu-pids: %v", err)
	}
	return nil
}

// credentials is the ACL key pair (empty when not set).
func (c Config) credentials() acl.Credentials {
	return acl.Credentials{AccessKey: c.AccessKey, SecretKey: c.SecretKey}
}

// adminCredentials sign the set-up requests: the ACL key pair, else the registration secret
// under acl.BrokerAccessKey (RocketMQ's signature with the secret as the secret key).
func (c Config) adminCredentials() (acl.Credentials, error) {
	if c.RegistrationSecretFile == "" {
		return c.credentials(), nil
	}
	secret, err := acl.LoadSecret("", c.RegistrationSecretFile, "registrationSecret", "-registrationSecretFile")
	if err != nil {
		return acl.Credentials{}, err
	}
	return acl.Credentials{AccessKey: acl.BrokerAccessKey, SecretKey: secret}, nil
}

func (c Config) namesrvs() []string {
	var out []string
	for _, a := range strings.Split(c.Namesrv, ";") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
