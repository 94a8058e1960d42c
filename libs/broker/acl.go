package broker

import (
	"fmt"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
)

// startACL loads aclPlainFile and starts watching it when aclEnable is set; the guard is then
// installed on the remoting server (every request is decided before its handler) and its
// counters are served on /metrics (rmqha_broker_acl_*). A file that does not load stops
// start-up. With ACL off, a warning says so at every start.
func (b *Broker) startACL() error {
	if !b.cfg.AclEnable {
		b.log.Warn("aclEnable=false: any client that reaches listenPort may send and consume; admin writes need the registration secret (set aclEnable=true and aclPlainFile)")
		return nil
	}
	g, err := acl.NewGuard(acl.Config{Path: b.cfg.AclPlainFile, Logger: b.log.WithField("component", "acl")})
	if err != nil {
		return fmt.Errorf("broker: aclEnable=true: %w", err)
	}
	if err := b.metrics.reg.Register(g.Collector(metricsPrefix)); err != nil {
		return fmt.Errorf("broker: acl metrics: %w", err)
	}
	g.Start()
	b.acl = g
	return nil
}

// signer signs this broker's own requests (registrations, a slave's metadata pulls) with
// accessKey/secretKey; nil when none are configured.
func (b *Broker) signer() func(*remoting.Command) {
	return acl.CredentialsSigner(b.cfg.Credentials())
}

// Credentials is the broker's own key pair (accessKey, secretKey); empty when not configured.
func (c Config) Credentials() acl.Credentials {
	return acl.Credentials{AccessKey: c.AccessKey, SecretKey: c.SecretKey}
}

// ACL is the access-control guard in use, or nil when aclEnable is off.
func (b *Broker) ACL() *acl.Guard { return b.acl }
