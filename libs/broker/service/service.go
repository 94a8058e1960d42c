// Package service is the shared body of the master and slave binaries: configuration from
// -c FILE, RMQ_* environment variables and flags (RocketMQ key names), logging, the start-up
// line, and a clean shutdown on SIGTERM/SIGINT.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/broker"
	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/obs"
	"github.com/rmqha/rmqha/libs/props"
	"github.com/sirupsen/logrus"
)

// Options describes one binary.
type Options struct {
	// Program is the binary's name for usage and logs.
	Program string
	// Defaults adjusts broker.DefaultConfig before the file, environment and flags apply
	// (the slave binary defaults to brokerRole=SLAVE, brokerId=1).
	Defaults func(*broker.Config)
	// CheckRole refuses roles this binary does not run; the error names the key.
	CheckRole func(broker.Config) error
	// ShutdownTimeout bounds the clean stop. Default 30s.
	ShutdownTimeout time.Duration
}

// Main runs a broker until SIGTERM/SIGINT and returns the process exit code: 0 after a clean
// stop, 2 for configuration errors, 1 for start or stop failures.
func Main(o Options, args, environ []string, stderr io.Writer) int {
	cfg := broker.DefaultConfig()
	if o.Defaults != nil {
		o.Defaults(&cfg)
	}
	// Keys of a RocketMQ 4.9 broker.conf that mean nothing here are accepted and warned about.
	var ignored []string
	var ignoredErr error
	file, err := props.LoadOptions(&cfg, o.Program, args, environ, stderr, props.Options{
		Foreign: broker.RocketMQKeys(),
		Ignored: func(key, value, source string) {
			if err := broker.CheckRocketMQValue(key, value); err != nil && ignoredErr == nil {
				ignoredErr = fmt.Errorf("%w (%s)", err, source)
			}
			ignored = append(ignored, key)
		},
	})
	if errors.Is(err, props.ErrHelp) {
		return 0
	}
	if err == nil {
		err = ignoredErr
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", o.Program, err)
		return 2
	}
	// UPDATE_BROKER_CONFIG writes the keys it changes back into the file the broker started with.
	cfg.ConfigFile = file
	// plain_acl.yml is found as RocketMQ finds it: a relative aclPlainFile is under ROCKETMQ_HOME.
	cfg.AclPlainFile = acl.ResolvePath(cfg.AclPlainFile, envValue(environ, "ROCKETMQ_HOME"))
	base, err := obs.NewLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", o.Program, err)
		return 2
	}
	base.SetOutput(stderr)
	// Every line names the service and the broker it comes from; the broker adds its role and
	// the components their peer and offset fields.
	log := base.WithFields(logrus.Fields{
		"service": o.Program, "cluster": cfg.BrokerClusterName, "broker": cfg.BrokerName, "brokerId": cfg.BrokerID,
	})
	if len(ignored) > 0 {
		sort.Strings(ignored)
		log.WithFields(logrus.Fields{"keys": strings.Join(ignored, ","), "count": len(ignored), "configFile": file}).
			Warn("RocketMQ broker.conf keys with no meaning here: ignored (this broker behaves as with their RocketMQ defaults, or has no such mechanism)")
	}
	if err := checkFailover(cfg); err != nil {
		log.WithError(err).Error("refusing to start")
		return 2
	}
	if o.CheckRole != nil {
		if err := o.CheckRole(cfg); err != nil {
			log.WithError(err).Error("refusing to start")
			return 2
		}
	}
	b, err := broker.New(cfg, log)
	if err != nil {
		log.WithError(err).Error("refusing to start")
		return 2
	}
	eff := b.Config()
	dump := props.Dump(&eff)
	keys := make([]string, 0, len(dump))
	for k := range dump {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(k + "=" + dump[k])
	}
	// Catch SIGTERM/SIGINT before starting, so a signal during start-up also stops cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := b.Start(); err != nil {
		log.WithError(err).Error("start failed")
		return 1
	}
	log.WithFields(logrus.Fields{
		"program": o.Program, "configFile": file, "role": eff.BrokerRole,
		"cluster": eff.BrokerClusterName, "brokerName": eff.BrokerName, "brokerId": eff.BrokerID,
		"listen": b.Addr(), "advertised": b.AdvertisedAddr(), "haListen": b.HAAddr(),
		"haServerAddr": b.Status().HAServerAddr, "haMasterAddress": eff.HAMasterAddress,
		"namesrvAddr": eff.NamesrvAddr, "http": b.HTTPAddr(), "metrics": metricsURL(b), "config": sb.String(),
	}).Info("broker running")

	followConsul(ctx, b, eff, environ, log)
	stopMeta := startMetaSync(ctx, b, eff, environ, log)
	defer stopMeta()
	stopFailover, err := startFailover(ctx, b, eff, environ, log)
	if err != nil {
		log.WithError(err).Error("automatic failover not started")
		_ = b.Shutdown(context.Background())
		return 2
	}
	<-ctx.Done()
	log.Info("signal received, shutting down")
	stopFailover()
	timeout := o.ShutdownTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := b.Shutdown(sctx); err != nil {
		log.WithError(err).Error("shutdown finished with errors")
		return 1
	}
	log.Info("clean shutdown")
	return 0
}

// Run is Main with the process's arguments, environment and stderr.
func Run(o Options) int { return Main(o, os.Args[1:], os.Environ(), os.Stderr) }

// MasterRoles refuses SLAVE (for the master binary).
func MasterRoles(c broker.Config) error {
	if !c.IsMaster() {
		return fmt.Errorf("brokerRole=%s: this binary runs ASYNC_MASTER or SYNC_MASTER; use the slave binary", c.BrokerRole)
	}
	return nil
}

// SlaveRoles refuses the master roles (for the slave binary).
func SlaveRoles(c broker.Config) error {
	if c.BrokerRole != broker.RoleSlave {
		return fmt.Errorf("brokerRole=%s: this binary runs SLAVE only; use the master binary", c.BrokerRole)
	}
	return nil
}

// followConsul makes a slave without a static haMasterAddress watch Consul
// for its master's HA address (blocking queries), when CONSUL_HTTP_ADDR is
// set. Without Consul the slave still learns the address from the name
// servers' registration answers.
func followConsul(ctx context.Context, b *broker.Broker, cfg broker.Config, environ []string, log logrus.FieldLogger) {
	if cfg.IsMaster() || cfg.HAMasterAddress != "" {
		return
	}
	addr := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "CONSUL_HTTP_ADDR="); ok {
			addr = v
		}
	}
	if addr == "" {
		return
	}
	client, err := discovery.NewClient(addr)
	if err != nil {
		log.WithError(err).Warn("consul client: master discovery through Consul disabled")
		return
	}
	l := log.WithField("component", "discovery")
	b.FollowMaster(ctx, &discovery.MasterWatcher{Client: client, Cluster: cfg.BrokerClusterName, BrokerName: cfg.BrokerName, Log: l})
	l.WithField("consul", addr).Info("following the master's HA address in Consul")
}

// metricsURL is where Prometheus scrapes this broker ("" without httpPort).
func metricsURL(b *broker.Broker) string {
	if b.HTTPAddr() == "" {
		return ""
	}
	return "http://" + b.HTTPAddr() + "/metrics"
}
