// Package syncer is the metasync service: it finds every master, pulls the
// four metadata tables from each on a schedule, keeps the latest snapshot per
// broker and table on disk, announces changed versions on NATS and serves the
// snapshots over HTTP.
//
// # Several instances
//
// With Consul configured, each broker group is synced by the one instance
// that holds the Consul lock on LockKey(cluster, brokerName)
// ("rmqha/metasync/lock/<cluster>/<brokerName>", session TTL lockSessionTTL,
// lock delay 1s). The others wait on the lock and answer 503 for that group's
// snapshots, so a follower moves on to the next URL. A killed holder's session
// expires after its TTL and another instance takes over; its first pull
// compares with its own disk and announces only what differs, and followers
// skip versions they already hold, so no update is lost or applied twice.
//
// Without Consul there is no coordination: every instance pulls every group
// (double work, never conflicting: each instance writes only its own
// storePathRootDir, guarded by a file lock, and followers deduplicate by
// DataVersion). Run one instance, or give each its own store.
package syncer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	consul "github.com/hashicorp/consul/api"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/libs/tlsconf"
	"github.com/sirupsen/logrus"
)

// Config configures the service; `prop` tags are the keys of metasync.conf.
type Config struct {
	// NamesrvAddr lists name servers ("host:port;host:port") asked for the
	// masters (GET_BROKER_CLUSTER_INFO) when neither masterAddrs nor Consul
	// is configured. Default "".
	NamesrvAddr string `prop:"namesrvAddr"`
	// MasterAddrs is a static list of masters, each "cluster/brokerName@host:port"
	// (or "brokerName@host:port" in brokerClusterName). It takes precedence
	// over Consul and the name servers for finding masters. Default empty.
	MasterAddrs []string `prop:"masterAddrs"`
	// BrokerClusterName is the cluster of masterAddrs entries that name none.
	// Default "DefaultCluster".
	BrokerClusterName string `prop:"brokerClusterName"`
	// SyncInterval is how often each master's tables are pulled. Default 10s.
	SyncInterval time.Duration `prop:"syncIntervalMillis,ms"`
	// PullTimeout bounds one GET_ALL_* request. Default 3s.
	PullTimeout time.Duration `prop:"pullTimeoutMillis,ms"`
	// StorePathRootDir holds the snapshots, under metasync/. Default $HOME/store.
	StorePathRootDir string `prop:"storePathRootDir"`
	// HTTPPort serves /snapshot/, /health and /status. Default 10950.
	HTTPPort int `prop:"httpPort"`
	// BindAddress is the interface HTTP listens on. Default 0.0.0.0.
	BindAddress string `prop:"bindAddress"`
	// AdvertisedURL is the base URL put in announcements (snapshotURL).
	// Default http://<hostname>:<httpPort>.
	AdvertisedURL string `prop:"advertisedUrl"`
	// NatsURL is the NATS server list; empty falls back to $NATS_URL, and
	// with neither no announcements are published. Default "".
	NatsURL string `prop:"natsUrl"`
	// SubjectPrefix roots the announcement subjects. Default "rmqha.meta".
	SubjectPrefix string `prop:"subjectPrefix"`
	// ConsulAddr overrides $CONSUL_HTTP_ADDR; with neither, Consul is not used
	// (no locks: see the package comment). Default "".
	ConsulAddr string `prop:"consulAddr"`
	// LockSessionTTL is the TTL of the Consul session behind the group locks:
	// how long a killed instance keeps its groups. Default 10s (Consul's minimum).
	LockSessionTTL time.Duration `prop:"lockSessionTTLMillis,ms"`
	// InstanceName identifies this instance in lock values and /status.
	// Default <hostname>:<httpPort>.
	InstanceName string `prop:"instanceName"`
	// LogLevel is logrus's level name. Default info.
	LogLevel string `prop:"logLevel"`
	// LogFormat is text or json. Default text.
	LogFormat string `prop:"logFormat"`
	// TLS: RocketMQ's tls.* keys (libs/tlsconf). metasync is a remoting client only:
	// tls.enable and tls.client.* apply to its pulls from masters and name servers;
	// tls.server.* are accepted (a shared tls.config.file may hold them) and unused.
	tlsconf.Config
	// AccessKey and SecretKey sign every remoting request (GET_ALL_* to the masters,
	// GET_BROKER_CLUSTER_INFO to the name servers), as RocketMQ's ACL expects; the metadata
	// dumps need an admin account on an ACL-enabled master. Both or neither. Default "".
	AccessKey string `prop:"accessKey"`
	SecretKey string `prop:"secretKey"`

	// Logger receives service events. Default a logrus logger on stderr.
	Logger logrus.FieldLogger `prop:"-"`
	// Now is the clock for fetch times and ages. Default time.Now.
	Now func() time.Time `prop:"-"`
	// FS is the file-system seam of the snapshot store. Default vfs.Default.
	FS vfs.FS `prop:"-"`
	// Bus overrides NatsURL (tests); nil dials NatsURL when set.
	Bus metasync.Bus `prop:"-"`
	// Consul overrides ConsulAddr (tests); nil dials ConsulAddr when set.
	Consul *consul.Client `prop:"-"`
	// Puller overrides the remoting client used for GET_ALL_* (tests).
	Puller metasync.Invoker `prop:"-"`
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	home, err := os.UserHomeDir()
	if err != nil {
		home = "."
	}
	return Config{
		BrokerClusterName: "DefaultCluster",
		SyncInterval:      10 * time.Second,
		PullTimeout:       3 * time.Second,
		StorePathRootDir:  filepath.Join(home, "store"),
		HTTPPort:          10950,
		BindAddress:       "0.0.0.0",
		SubjectPrefix:     metasync.DefaultSubjectPrefix,
		LockSessionTTL:    10 * time.Second,
		LogLevel:          "info",
		LogFormat:         "text",
		FS:                vfs.Default,
		Now:               time.Now,
		Logger:            logrus.New(),
		Config:            tlsconf.DefaultConfig(),
	}
}

// Validate names the first unusable field.
func (c Config) Validate() error {
	bad := func(key, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, key, fmt.Sprintf(format, a...))
	}
	for _, m := range c.MasterAddrs {
		if _, err := ParseMasterAddr(m, c.BrokerClusterName); err != nil {
			return bad("masterAddrs", "%v", err)
		}
	}
	switch {
	case c.SyncInterval <= 0:
		return bad("syncIntervalMillis", "%v is not positive", c.SyncInterval)
	case c.PullTimeout <= 0:
		return bad("pullTimeoutMillis", "%v is not positive", c.PullTimeout)
	case c.StorePathRootDir == "":
		return bad("storePathRootDir", "empty")
	case c.HTTPPort < 0 || c.HTTPPort > 65535:
		return bad("httpPort", "%d out of range", c.HTTPPort)
	case c.SubjectPrefix == "" || strings.ContainsAny(c.SubjectPrefix, " *>"):
		return bad("subjectPrefix", "%q is not a subject prefix", c.SubjectPrefix)
	case c.LockSessionTTL < 10*time.Second:
		return bad("lockSessionTTLMillis", "%v is below Consul's minimum of 10s", c.LockSessionTTL)
	case c.LogFormat != "text" && c.LogFormat != "json":
		return bad("logFormat", "%q is not text or json", c.LogFormat)
	case (c.AccessKey == "") != (c.SecretKey == ""):
		return bad("secretKey", "accessKey and secretKey are set together (accessKey %q)", c.AccessKey)
	case c.FS == nil:
		return bad("FS", "nil")
	case c.Now == nil:
		return bad("Now", "nil")
	case c.Logger == nil:
		return bad("Logger", "nil")
	}
	if _, err := logrus.ParseLevel(c.LogLevel); err != nil {
		return bad("logLevel", "%v", err)
	}
	return nil
}

// Target is one master to sync.
type Target struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	Addr       string `json:"addr"`
	Epoch      int64  `json:"epoch"`
}

// ParseMasterAddr parses a masterAddrs entry: "cluster/brokerName@host:port"
// or "brokerName@host:port" (cluster defaults to defCluster).
func ParseMasterAddr(s, defCluster string) (Target, error) {
	name, addr, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok || addr == "" || name == "" {
		return Target{}, fmt.Errorf("%q is not [cluster/]brokerName@host:port", s)
	}
	cluster := defCluster
	if c, b, ok := strings.Cut(name, "/"); ok {
		cluster, name = c, b
	}
	if cluster == "" || name == "" {
		return Target{}, fmt.Errorf("%q is not [cluster/]brokerName@host:port", s)
	}
	return Target{Cluster: cluster, BrokerName: name, Addr: addr}, nil
}
