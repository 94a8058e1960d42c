// Package nameserver answers RocketMQ's name server requests (routes,
// cluster info, broker registration) from a registry.Registry.
//
// # Who may register
//
// REGISTER_BROKER and UNREGISTER_BROKER change routes, so they are
// authenticated in the default configuration. A broker signs them (libs/acl:
// RocketMQ's HMAC-SHA1 request signature) under the access key "rmqha-broker"
// with the cluster registration secret (registrationSecret or
// registrationSecretFile, the same on every name server and broker), adding a
// signed registrationTime and registrationDigest (acl.PrepareRegistration).
// The name server, before it decodes the body or records anything:
//
//  1. bounds the identity fields (clusterName, brokerName, brokerAddr) and the
//     body size;
//  2. verifies the signature (Authenticator; SecretAuthenticator here, an ACL
//     admin account when ACL is on);
//  3. checks the digest (values bound to their keys and the request code);
//  4. refuses a registrationTime outside registrationMaxClockSkew of its
//     clock, or not after the last one accepted from the same broker
//     (cluster, broker name, broker address): a recorded request cannot be
//     played again.
//
// Refusals answer NO_PERMISSION (16) with a remark saying what is missing,
// are counted in rmqha_namesrv_registration_refusals_total{request,reason}
// and logged with the peer address (at most 10 lines per 10 s). Without a
// secret or an Authenticator the name server refuses to start unless
// registrationAllowUnauthenticated=true (warned at every start); unsigned
// registrations are then admitted with their declared epoch ignored, and
// the registry's connection rules (see package registry) still keep them
// from changing what other connections registered.
package nameserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/tlsconf"
	"github.com/rmqha/rmqha/services/namesrv/kvconfig"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/sirupsen/logrus"
)

// Config is the name server's configuration; `prop` tags are the keys of
// namesrv.conf (RocketMQ's names where RocketMQ has the concept).
type Config struct {
	// ListenPort is the remoting port clients and brokers dial. Default 9876.
	ListenPort int `prop:"listenPort"`
	// BindAddress is the interface to listen on. Default 0.0.0.0.
	BindAddress string `prop:"bindAddress"`
	// HTTPPort serves /health and /status; 0 turns it off. Default 0.
	HTTPPort int `prop:"httpPort"`
	// ScanNotActiveBrokerInterval is how often brokers that stopped
	// registering are looked for. Default 5s.
	ScanNotActiveBrokerInterval time.Duration `prop:"scanNotActiveBrokerInterval,ms"`
	// BrokerExpire drops a broker that has not registered for this long
	// (brokers register every 30s). Default 120s.
	BrokerExpire time.Duration `prop:"brokerChannelExpiredTime,ms"`
	// RegistryBackend is where the broker registry lives: "consul" (shared
	// by every name server, survives restarts), "memory" (this process
	// only), or "auto" = consul when CONSUL_HTTP_ADDR is set. Default auto.
	RegistryBackend string `prop:"registryBackend"`
	// ConsulTCPCheckInterval is how often the Consul agent dials each
	// broker's client port to detect a broker that stopped answering; 0
	// disables that check. Default 2s.
	ConsulTCPCheckInterval time.Duration `prop:"consulTcpCheckInterval,ms"`
	// MaxFrameSize bounds one remoting frame in bytes. Default 16 MiB.
	MaxFrameSize int `prop:"maxFrameSize"`
	// LogLevel is logrus's level name. Default info.
	LogLevel string `prop:"logLevel"`
	// LogFormat is text or json. Default text.
	LogFormat string `prop:"logFormat"`

	// Remoting transport: RocketMQ's tls.* keys (libs/tlsconf: the remoting port's mode and
	// certificates) and the remoting port's bounds (libs/remoting ServerKeys).
	tlsconf.Config
	remoting.ServerKeys
	// HTTPTLSEnable serves the status HTTP port over HTTPS with the remoting port's server
	// certificate. Default false.
	HTTPTLSEnable bool `prop:"httpTlsEnable"`
	// HTTPPprofEnable serves net/http/pprof under /debug/pprof/ on the status HTTP port
	// (httpPort, over HTTPS with httpTlsEnable); a warning is logged at each start while it is
	// on. Default false.
	HTTPPprofEnable bool `prop:"httpPprofEnable"`
	// RegistrationSecret is the cluster registration secret (at least 16 bytes; brokers set
	// the same key): REGISTER_BROKER and UNREGISTER_BROKER must be signed with it under the
	// access key "rmqha-broker". Default "" (then registrationSecretFile, an Authenticator or
	// registrationAllowUnauthenticated is required).
	RegistrationSecret string `prop:"registrationSecret"`
	// RegistrationSecretFile is a file holding the registration secret (surrounding white
	// space trimmed); unreadable refuses start. Exclusive with registrationSecret. Default "".
	RegistrationSecretFile string `prop:"registrationSecretFile"`
	// RegistrationAllowUnauthenticated admits unsigned registrations (warned at every
	// start): their declared epochs are ignored and they may not change what another
	// connection registered. Signed ones are still verified when a secret is set.
	// Default false.
	RegistrationAllowUnauthenticated bool `prop:"registrationAllowUnauthenticated"`
	// RegistrationMaxClockSkew is how far a signed registration's registrationTime may be
	// from this name server's clock, either way. Default 60s.
	RegistrationMaxClockSkew time.Duration `prop:"registrationMaxClockSkew,ms"`
	// MaxClusterNameLength bounds clusterName in registrations, in bytes. Default 127.
	MaxClusterNameLength int `prop:"maxClusterNameLength"`
	// MaxBrokerNameLength bounds brokerName in registrations, in bytes. Default 127.
	MaxBrokerNameLength int `prop:"maxBrokerNameLength"`
	// MaxTopicsPerRegistration bounds the topics one registration carries. Default 32768.
	MaxTopicsPerRegistration int `prop:"maxTopicsPerRegistration"`
	// MaxRegistrationBodySize bounds a REGISTER_BROKER body in bytes (checked before it is
	// decoded; at most maxFrameSize). Default 8 MiB.
	MaxRegistrationBodySize int `prop:"maxRegistrationBodySize"`
	// MaxBrokersPerCluster bounds the live brokers of one cluster. Default 1024.
	MaxBrokersPerCluster int `prop:"maxBrokersPerCluster"`
	// MaxBrokerGroupsPerCluster bounds the broker names of one cluster. Default 256.
	MaxBrokerGroupsPerCluster int `prop:"maxBrokerGroupsPerCluster"`
	// MaxClusters bounds the clusters the registry holds. Default 64.
	MaxClusters int `prop:"maxClusters"`

	// KVConfigPath is the file of the KV configuration (PUT_KV_CONFIG ...) when the registry is
	// not on Consul; with Consul the items are in Consul KV under rmqha/kvconfig/. Default
	// $HOME/namesrv/kvConfig.json (RocketMQ's).
	KVConfigPath string `prop:"kvConfigPath"`
	// KVConfigMaxEntries bounds the KV configuration's items. Default 10000.
	KVConfigMaxEntries int `prop:"kvConfigMaxEntries"`
	// KVConfigMaxValueSize bounds one KV configuration value, in bytes. Default 65536.
	KVConfigMaxValueSize int `prop:"kvConfigMaxValueSize"`
	// KVStore, when set, holds the KV configuration instead of kvConfigPath (the Consul store).
	// Not a property.
	KVStore kvconfig.Store `prop:"-"`
	// KVFS is the file system of kvConfigPath; nil means the operating system's. Not a property.
	KVFS vfs.FS `prop:"-"`

	// Authenticator, when set, verifies signed registrations instead of the registration
	// secret (an ACL-based one when aclEnable is on). Default nil.
	Authenticator Authenticator `prop:"-"`
	// --- Access control (libs/acl), RocketMQ 4.x plain ACL. ---

	// AclEnable requires every request to carry a valid signature of an account of
	// aclPlainFile: route and cluster lookups from any account, REGISTER_BROKER,
	// UNREGISTER_BROKER and the other writes from admin accounts only; anything else is
	// answered NO_PERMISSION. Default false.
	AclEnable bool `prop:"aclEnable"`
	// AclPlainFile is the plain_acl.yml (the brokers' format): relative paths are under
	// ROCKETMQ_HOME when that is set. Reloaded when it changes. Default "conf/plain_acl.yml".
	AclPlainFile string `prop:"aclPlainFile"`
	// Guards are further remoting.Guards, run in order after the ACL guard (when aclEnable)
	// on every request that guard admitted; the first refusal answers. Not a property.
	Guards []remoting.Guard `prop:"-"`

	// ConfigFile is the properties file the configuration was read from (-c), "" for none:
	// UPDATE_NAMESRV_CONFIG persists into it (RocketMQ's configStorePath is its -c file) and
	// is refused without one. Not a property.
	ConfigFile string `prop:"-"`
	// ConfigFS is the file system of ConfigFile; nil means the operating system's. Not a
	// property.
	ConfigFS vfs.FS `prop:"-"`
	// SetLogLevel, when set, changes the running log level (UPDATE_NAMESRV_CONFIG logLevel
	// applies at once; without it at the next start). Not a property.
	SetLogLevel func(level string) error `prop:"-"`

	Logger logrus.FieldLogger `prop:"-"`
	Now    func() time.Time   `prop:"-"`
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		ListenPort:                  9876,
		BindAddress:                 "0.0.0.0",
		ScanNotActiveBrokerInterval: 5 * time.Second,
		BrokerExpire:                120 * time.Second,
		MaxFrameSize:                16 << 20,
		RegistryBackend:             "auto",
		ConsulTCPCheckInterval:      2 * time.Second,
		LogLevel:                    "info",
		LogFormat:                   "text",
		Config:                      tlsconf.DefaultConfig(),
		ServerKeys:                  remoting.DefaultServerKeys(),
		RegistrationMaxClockSkew:    60 * time.Second,
		MaxClusterNameLength:        127,
		MaxBrokerNameLength:         127,
		MaxTopicsPerRegistration:    32768,
		MaxRegistrationBodySize:     8 << 20,
		MaxBrokersPerCluster:        1024,
		MaxBrokerGroupsPerCluster:   256,
		MaxClusters:                 64,
		AclPlainFile:                "conf/plain_acl.yml",
		KVConfigPath:                defaultKVConfigPath(),
		KVConfigMaxEntries:          kvconfig.DefaultLimits().MaxEntries,
		KVConfigMaxValueSize:        kvconfig.DefaultLimits().MaxValueSize,
	}
}

// defaultKVConfigPath is RocketMQ's ${user.home}/namesrv/kvConfig.json.
func defaultKVConfigPath() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "."
	}
	return filepath.Join(home, "namesrv", "kvConfig.json")
}

// kvLimits are the KV configuration bounds of the configuration.
func (c Config) kvLimits() kvconfig.Limits {
	l := kvconfig.DefaultLimits()
	l.MaxEntries, l.MaxValueSize = c.KVConfigMaxEntries, c.KVConfigMaxValueSize
	return l
}

// Limits are the registry bounds of the configuration.
func (c Config) Limits() registry.Limits {
	return registry.Limits{
		MaxClusterNameLength: c.MaxClusterNameLength, MaxBrokerNameLength: c.MaxBrokerNameLength,
		MaxTopicsPerRegistration: c.MaxTopicsPerRegistration, MaxBodySize: c.MaxRegistrationBodySize,
		MaxBrokersPerCluster: c.MaxBrokersPerCluster, MaxBrokerGroupsPerCluster: c.MaxBrokerGroupsPerCluster,
		MaxClusters: c.MaxClusters,
	}
}

// registrationSecret resolves registrationSecret / registrationSecretFile.
func (c Config) registrationSecret() (string, error) {
	s, err := acl.LoadSecret(c.RegistrationSecret, c.RegistrationSecretFile, "registrationSecret", "registrationSecretFile")
	if err != nil {
		return "", fmt.Errorf("nameserver: %w", err)
	}
	return s, nil
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.ListenPort <= 0 || c.ListenPort > 65535:
		return fmt.Errorf("nameserver: listenPort %d out of range", c.ListenPort)
	case c.HTTPPort < 0 || c.HTTPPort > 65535:
		return fmt.Errorf("nameserver: httpPort %d out of range", c.HTTPPort)
	case c.ScanNotActiveBrokerInterval <= 0:
		return errors.New("nameserver: scanNotActiveBrokerInterval must be positive")
	case c.BrokerExpire < c.ScanNotActiveBrokerInterval:
		return errors.New("nameserver: brokerChannelExpiredTime must be at least scanNotActiveBrokerInterval")
	case c.MaxFrameSize < 1024:
		return errors.New("nameserver: maxFrameSize below 1 KiB")
	case c.RegistryBackend != "auto" && c.RegistryBackend != "memory" && c.RegistryBackend != "consul":
		return fmt.Errorf("nameserver: registryBackend %q is not auto, memory or consul", c.RegistryBackend)
	case c.ConsulTCPCheckInterval < 0:
		return errors.New("nameserver: consulTcpCheckInterval must not be negative")
	case c.LogFormat != "text" && c.LogFormat != "json":
		return fmt.Errorf("nameserver: logFormat %q is not text or json", c.LogFormat)
	case c.AclEnable && c.AclPlainFile == "":
		return errors.New("nameserver: aclPlainFile is empty with aclEnable=true")
	case c.KVStore == nil && c.KVConfigPath == "":
		return errors.New("nameserver: kvConfigPath is empty")
	case c.KVConfigMaxEntries <= 0:
		return fmt.Errorf("nameserver: kvConfigMaxEntries %d must be positive", c.KVConfigMaxEntries)
	case c.KVConfigMaxValueSize <= 0 || c.KVConfigMaxValueSize > c.MaxFrameSize:
		return fmt.Errorf("nameserver: kvConfigMaxValueSize %d not in (0, maxFrameSize]", c.KVConfigMaxValueSize)
	}
	if _, err := logrus.ParseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("nameserver: logLevel: %w", err)
	}
	if err := c.Config.Validate(); err != nil {
		return fmt.Errorf("nameserver: %w", err)
	}
	if err := c.ServerKeys.Validate(c.MaxFrameSize); err != nil {
		return fmt.Errorf("nameserver: %w", err)
	}
	return c.validateRegistration()
}

// validateRegistration checks the registration keys; a name server that would accept
// registrations from anyone without being told so refuses to start.
func (c Config) validateRegistration() error {
	secret, err := c.registrationSecret()
	if err != nil {
		return err
	}
	if secret == "" && c.Authenticator == nil && !c.AclEnable && !c.RegistrationAllowUnauthenticated {
		return fmt.Errorf("nameserver: %w: set registrationSecret or registrationSecretFile (the brokers set the same key) or aclEnable=true, "+
			"or registrationAllowUnauthenticated=true to let anyone register brokers", ErrNoRegistrationSecret)
	}
	if c.RegistrationMaxClockSkew < time.Second {
		return fmt.Errorf("nameserver: registrationMaxClockSkew %v below 1s", c.RegistrationMaxClockSkew)
	}
	for _, l := range []struct {
		key string
		v   int
	}{
		{"maxClusterNameLength", c.MaxClusterNameLength}, {"maxBrokerNameLength", c.MaxBrokerNameLength},
		{"maxTopicsPerRegistration", c.MaxTopicsPerRegistration}, {"maxRegistrationBodySize", c.MaxRegistrationBodySize},
		{"maxBrokersPerCluster", c.MaxBrokersPerCluster}, {"maxBrokerGroupsPerCluster", c.MaxBrokerGroupsPerCluster},
		{"maxClusters", c.MaxClusters},
	} {
		if l.v <= 0 {
			return fmt.Errorf("nameserver: %s %d must be positive", l.key, l.v)
		}
	}
	if c.MaxRegistrationBodySize > c.MaxFrameSize {
		return fmt.Errorf("nameserver: maxRegistrationBodySize %d exceeds maxFrameSize %d", c.MaxRegistrationBodySize, c.MaxFrameSize)
	}
	return nil
}
