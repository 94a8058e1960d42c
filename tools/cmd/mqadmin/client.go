package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// Config configures an Admin.
type Config struct {
	// Namesrvs are the name servers' remoting addresses, tried in order. Empty is allowed for
	// commands that talk to one broker only.
	Namesrvs []string
	// Timeout bounds each request (dial included). Default 3s.
	Timeout time.Duration
	// Logger receives connection-level events of the remoting client. Default: discards.
	Logger logrus.FieldLogger
	// TLS, when set, makes every remoting connection TLS (-tls.enable). Default nil.
	TLS *tls.Config
	// Credentials sign every request (RocketMQ ACL); empty sends unsigned requests. Default none.
	Credentials acl.Credentials
	// RegistrationSecret, without Credentials, signs every request under the brokers' access
	// key with the cluster registration secret, as name servers with ACL off want admin
	// writes. Default "".
	RegistrationSecret string
}

// DefaultConfig returns the defaults described on Config.
func DefaultConfig() Config {
	l := logrus.New()
	l.SetOutput(io.Discard)
	return Config{Timeout: 3 * time.Second, Logger: l}
}

// Validate names the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.Timeout <= 0:
		return fmt.Errorf("%w: Timeout %v <= 0", ErrUsage, c.Timeout)
	case c.Logger == nil:
		return fmt.Errorf("%w: Logger is nil", ErrUsage)
	}
	for _, a := range c.Namesrvs {
		if !strings.Contains(a, ":") {
			return fmt.Errorf("%w: name server address %q is not host:port", ErrUsage, a)
		}
	}
	return nil
}

// Admin sends admin requests to name servers and brokers.
type Admin struct {
	cfg  Config
	cli  *remoting.Client
	http *http.Client
}

// NewAdmin validates cfg and builds an Admin; Close releases its connections.
func NewAdmin(cfg Config) (*Admin, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cc := remoting.DefaultClientConfig()
	cc.DialTimeout, cc.RequestTimeout, cc.Logger = cfg.Timeout, cfg.Timeout, cfg.Logger
	cc.TLS = cfg.TLS
	cc.Signer = acl.CredentialsSigner(cfg.Credentials)
	if cc.Signer == nil && cfg.RegistrationSecret != "" {
		cc.Signer = acl.Signer(acl.BrokerAccessKey, cfg.RegistrationSecret)
	}
	return &Admin{cfg: cfg, cli: remoting.NewClient(cc), http: statusClient(cfg.Timeout)}, nil
}

// Close closes every connection.
func (a *Admin) Close() error { return a.cli.Close() }

// Invoke sends one request to addr and returns a successful response; a non-success code
// becomes a *serverError (ErrServer), a transport failure ErrUnreachable.
func (a *Admin) Invoke(ctx context.Context, addr string, code int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	return a.InvokeWithin(ctx, a.cfg.Timeout, addr, code, ext, body)
}

// InvokeWithin is Invoke with its own timeout (a request the broker relays to a client, which
// the broker itself waits up to 10 s for).
func (a *Admin) InvokeWithin(ctx context.Context, timeout time.Duration, addr string, code int32, ext map[string]string, body []byte) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := a.cli.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		return nil, classify(addr, err)
	}
	if resp.Code != remoting.Success {
		return resp, &serverError{addr: addr, code: resp.Code, remark: resp.Remark}
	}
	return resp, nil
}

// invokeNamesrv tries each name server in order until one answers (successfully or not).
func (a *Admin) invokeNamesrv(ctx context.Context, code int32, ext map[string]string) (*remoting.Command, error) {
	if len(a.cfg.Namesrvs) == 0 {
		return nil, fmt.Errorf("%w: no name server: set -n host:port or NAMESRV_ADDR", ErrUsage)
	}
	var errs []error
	for _, ns := range a.cfg.Namesrvs {
		resp, err := a.Invoke(ctx, ns, code, ext, nil)
		if err == nil || !errors.Is(err, ErrUnreachable) {
			return resp, err
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("%w: no name server answered: %w", ErrUnreachable, errors.Join(errs...))
}

// ClusterInfo asks a name server for GET_BROKER_CLUSTER_INFO.
func (a *Admin) ClusterInfo(ctx context.Context) (route.ClusterInfo, error) {
	resp, err := a.invokeNamesrv(ctx, remoting.GetBrokerClusterInfo, nil)
	if err != nil {
		return route.ClusterInfo{}, err
	}
	ci, err := route.DecodeClusterInfo(resp.Body)
	if err != nil {
		return ci, fmt.Errorf("%w: cluster info: %w", ErrServer, err)
	}
	return ci, nil
}

// TopicRoute asks a name server for a topic's route.
func (a *Admin) TopicRoute(ctx context.Context, topic string) (route.TopicRouteData, error) {
	resp, err := a.invokeNamesrv(ctx, remoting.GetRouteInfoByTopic, map[string]string{"topic": topic})
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && se.code == remoting.TopicNotExist {
			return route.TopicRouteData{}, fmt.Errorf("%w: topic %s: %w", ErrNotFound, topic, err)
		}
		return route.TopicRouteData{}, err
	}
	rd, err := route.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return rd, fmt.Errorf("%w: route of %s: %w", ErrServer, topic, err)
	}
	return rd, nil
}

// TopicList asks a name server for every topic it knows.
func (a *Admin) TopicList(ctx context.Context) ([]string, error) {
	resp, err := a.invokeNamesrv(ctx, remoting.GetAllTopicListFromNameServer, nil)
	if err != nil {
		return nil, err
	}
	var body struct {
		TopicList []string `json:"topicList"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("%w: topic list: %w", ErrServer, err)
	}
	sort.Strings(body.TopicList)
	return body.TopicList, nil
}

// RuntimeInfo asks a broker for its GET_BROKER_RUNTIME_INFO table.
func (a *Admin) RuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := a.Invoke(ctx, addr, remoting.GetBrokerRuntimeInfo, nil, nil)
	if err != nil {
		return nil, err
	}
	body, err := route.Lenient(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: runtime info of %s: %w", ErrServer, addr, err)
	}
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := json.Unmarshal(body, &kv); err != nil {
		return nil, fmt.Errorf("%w: runtime info of %s: %w", ErrServer, addr, err)
	}
	if kv.Table == nil {
		kv.Table = map[string]string{}
	}
	return kv.Table, nil
}

// offsetExt reads the "offset" ext field of a response.
func offsetExt(addr string, resp *remoting.Command) (int64, error) {
	n, err := resp.ExtInt64("offset")
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrServer, addr, err)
	}
	return n, nil
}

// MaxOffset asks a broker for a queue's max (next) logical offset.
func (a *Admin) MaxOffset(ctx context.Context, addr, topic string, qid int32) (int64, error) {
	resp, err := a.Invoke(ctx, addr, remoting.GetMaxOffset,
		map[string]string{"topic": topic, "queueId": strconv.Itoa(int(qid))}, nil)
	if err != nil {
		return 0, err
	}
	return offsetExt(addr, resp)
}

// ConsumerOffset asks a broker for a group's committed offset of a queue; found is false when
// the broker has none (QUERY_NOT_FOUND).
func (a *Admin) ConsumerOffset(ctx context.Context, addr, group, topic string, qid int32) (off int64, found bool, err error) {
	resp, err := a.Invoke(ctx, addr, remoting.QueryConsumerOffset,
		map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(int(qid))}, nil)
	if err != nil {
		var se *serverError
		if errors.As(err, &se) && se.code == remoting.QueryNotFound {
			return -1, false, nil
		}
		return 0, false, err
	}
	off, err = offsetExt(addr, resp)
	return off, err == nil, err
}

// statusClient reads status pages: plain HTTP, or HTTPS for brokers with httpTlsEnable, whose
// certificate is not checked (the page is read-only and may carry the test-mode self-signed
// certificate; what haStatus shows from it is cross-checked against the remoting answers).
func statusClient(timeout time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	return &http.Client{Timeout: timeout, Transport: tr}
}

// HTTPStatus reads a broker's /status JSON from its HTTP endpoint ("host:port", or
// "https://host:port" for a status port that serves HTTPS).
func (a *Admin) HTTPStatus(ctx context.Context, hostport string) (*BrokerHTTPStatus, error) {
	url := "http://" + hostport + "/status"
	if strings.HasPrefix(hostport, "https://") {
		url = hostport + "/status"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: http address %q: %w", ErrUsage, hostport, err)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnreachable, hostport, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s/status answered %s", ErrServer, hostport, resp.Status)
	}
	var st BrokerHTTPStatus
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: %s/status: %w", ErrServer, hostport, err)
	}
	return &st, nil
}

// BrokerHTTPStatus is the part of a broker's /status JSON that haStatus reads. Field names
// match case-insensitively, so both the Go field names and lower-camel JSON keys decode.
type BrokerHTTPStatus struct {
	Role           string          `json:"role"`
	Cluster        string          `json:"cluster"`
	BrokerName     string          `json:"brokerName"`
	BrokerID       int64           `json:"brokerId"`
	Addr           string          `json:"addr"`
	AdvertisedAddr string          `json:"advertisedAddr"`
	MinOffset      int64           `json:"minOffset"`
	MaxOffset      int64           `json:"maxOffset"`
	HAMaster       *haMasterStatus `json:"haMaster"`
	HASlave        *struct {
		MasterAddr      string  `json:"masterAddr"`
		Connected       bool    `json:"connected"`
		State           string  `json:"state"`
		MasterEpoch     int64   `json:"masterEpoch"`
		MasterMaxOffset int64   `json:"masterMaxOffset"`
		LocalMaxOffset  int64   `json:"localMaxOffset"`
		LagBytes        int64   `json:"lagBytes"`
		LagSeconds      float64 `json:"lagSeconds"`
		LastEpoch       int64   `json:"lastEpoch"`
		LastError       string  `json:"lastError"`
	} `json:"haSlave"`
}

// brokerRef is one broker of the cluster table.
type brokerRef struct {
	Cluster    string
	BrokerName string
	BrokerID   int64
	Addr       string
}

// brokers flattens cluster info into a sorted list, optionally limited to one cluster.
func brokers(ci route.ClusterInfo, cluster string) []brokerRef {
	inCluster := map[string]string{}
	for c, names := range ci.ClusterAddrTable {
		for _, n := range names {
			inCluster[n] = c
		}
	}
	var out []brokerRef
	for name, bd := range ci.BrokerAddrTable {
		c := bd.Cluster
		if c == "" {
			c = inCluster[name]
		}
		if cluster != "" && c != cluster {
			continue
		}
		for id, addr := range bd.BrokerAddrs {
			out = append(out, brokerRef{Cluster: c, BrokerName: name, BrokerID: id, Addr: addr})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Cluster != y.Cluster {
			return x.Cluster < y.Cluster
		}
		if x.BrokerName != y.BrokerName {
			return x.BrokerName < y.BrokerName
		}
		return x.BrokerID < y.BrokerID
	})
	return out
}

// targets resolves the brokers a write command goes to: the one given with -b, or every
// master of the cluster given with -c.
func (a *Admin) targets(ctx context.Context, brokerAddr, cluster string) ([]string, error) {
	switch {
	case brokerAddr != "" && cluster != "":
		return nil, fmt.Errorf("%w: give -b or -c, not both", ErrUsage)
	case brokerAddr != "":
		return []string{brokerAddr}, nil
	case cluster == "":
		return nil, fmt.Errorf("%w: -b broker address or -c cluster required", ErrUsage)
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, b := range brokers(ci, cluster) {
		if b.BrokerID == route.MasterID {
			addrs = append(addrs, b.Addr)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no master in cluster %q", ErrNotFound, cluster)
	}
	return addrs, nil
}

// haMasterStatus is a master's replication view in /status.
type haMasterStatus struct {
	Epoch       int64           `json:"epoch"`
	Confirmed   int64           `json:"confirmed"`
	InSyncCount int             `json:"inSyncCount"`
	Slaves      []haSlaveOfView `json:"slaves"`
}

// haSlaveOfView is one slave connection as its master sees it.
type haSlaveOfView struct {
	Addr       string  `json:"addr"`
	BrokerID   int64   `json:"brokerId"`
	Streaming  bool    `json:"streaming"`
	AckOffset  int64   `json:"ackOffset"`
	LagBytes   int64   `json:"lagBytes"`
	LagSeconds float64 `json:"lagSeconds"`
	InSync     bool    `json:"inSync"`
}
