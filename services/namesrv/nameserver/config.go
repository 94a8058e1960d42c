// Package nameserver answers RocketMQ's name server requests (routes,
// cluster info, broker registration) from a registry.Registry.
package nameserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
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
		AclPlainFile:                "conf/plain_acl.yml",
	}
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
	}
	if _, err := logrus.ParseLevel(c.LogLevel); err != nil {
		return fmt.Errorf("nameserver: logLevel: %w", err)
	}
	return nil
}
