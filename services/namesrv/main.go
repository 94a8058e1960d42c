// Command namesrv is the name server of the broker group: brokers register
// with it, clients ask it for topic routes (RocketMQ's remoting protocol on
// listenPort, 9876 by default).
//
//	namesrv -c namesrv.conf      # keys: see `namesrv -h`
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rmqha/rmqha/libs/discovery"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/services/namesrv/kvconfig"
	"github.com/rmqha/rmqha/services/namesrv/nameserver"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/sirupsen/logrus"
)

func main() {
	if err := run(); err != nil {
		if errors.Is(err, props.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "namesrv:", err)
		os.Exit(2)
	}
}

func run() error {
	cfg := nameserver.DefaultConfig()
	// Keys of a RocketMQ 4.9 namesrv.conf that mean nothing here are accepted and warned about.
	rk := nameserver.RocketMQKeys()
	var ignored []string
	var ignoredErr error
	file, err := props.LoadOptions(&cfg, os.Args[0], os.Args[1:], os.Environ(), os.Stderr, props.Options{
		Foreign: rk.Foreign(),
		Ignored: func(key, value, source string) {
			if err := rk.Check(key, value); err != nil && ignoredErr == nil {
				ignoredErr = fmt.Errorf("%w (%s)", err, source)
			}
			ignored = append(ignored, key)
		},
	})
	if err == nil {
		err = ignoredErr
	}
	if err != nil {
		return err
	}
	cfg.ConfigFile = file // UPDATE_NAMESRV_CONFIG persists here; "" refuses it
	// plain_acl.yml is found as RocketMQ finds it: a relative aclPlainFile is under ROCKETMQ_HOME.
	cfg.AclPlainFile = acl.ResolvePath(cfg.AclPlainFile, os.Getenv("ROCKETMQ_HOME"))
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := logrus.New()
	lvl, _ := logrus.ParseLevel(cfg.LogLevel)
	log.SetLevel(lvl)
	if cfg.LogFormat == "json" {
		log.SetFormatter(&logrus.JSONFormatter{})
	}
	entry := log.WithField("service", "namesrv")
	cfg.SetLogLevel = func(level string) error {
		l, err := logrus.ParseLevel(level)
		if err == nil {
			log.SetLevel(l)
		}
		return err
	}
	if len(ignored) > 0 {
		sort.Strings(ignored)
		entry.WithFields(logrus.Fields{"keys": strings.Join(ignored, ","), "count": len(ignored), "configFile": file}).
			Warn("RocketMQ namesrv.conf keys with no meaning here: ignored (this name server behaves as with their RocketMQ defaults, or has no such mechanism)")
	}
	cfg.Logger = entry
	reg, backend, kv, err := openRegistry(cfg, entry)
	if err != nil {
		return err
	}
	cfg.KVStore = kv // nil: kvConfigPath
	srv, err := nameserver.New(cfg, reg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	entry.WithFields(logrus.Fields{"config": props.Dump(&cfg), "file": file, "addr": srv.Addr().String(), "registry": backend}).Info("namesrv started")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	entry.WithField("signal", s.String()).Info("stopping")
	return srv.Close()
}

// openRegistry picks the registry backend. With Consul the first answers are
// awaited for a few seconds; an unreachable Consul does not stop start-up:
// the name server serves (empty, stale) state and converges once Consul
// answers.
//
// With Consul the KV configuration is in Consul KV too; otherwise (nil store) in kvConfigPath.
func openRegistry(cfg nameserver.Config, log logrus.FieldLogger) (registry.Registry, string, kvconfig.Store, error) {
	backend := cfg.RegistryBackend
	if backend == "auto" {
		backend = "memory"
		if os.Getenv("CONSUL_HTTP_ADDR") != "" {
			backend = "consul"
		}
	}
	if backend == "memory" {
		return registry.NewMemoryWithLimits(cfg.Limits()), backend, nil, nil
	}
	client, err := discovery.NewClient("")
	if err != nil {
		return nil, "", nil, fmt.Errorf("consul client: %w", err)
	}
	cc := registry.DefaultConsulConfig()
	cc.Client = client
	cc.TTL = cfg.BrokerExpire
	cc.TCPInterval = cfg.ConsulTCPCheckInterval
	cc.Limits = cfg.Limits()
	cc.Logger = log
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reg, err := registry.NewConsul(ctx, cc)
	if err != nil {
		return nil, "", nil, err
	}
	lim := kvconfig.DefaultLimits()
	lim.MaxEntries, lim.MaxValueSize = cfg.KVConfigMaxEntries, cfg.KVConfigMaxValueSize
	kv, err := kvconfig.NewConsul(client, lim)
	if err != nil {
		reg.Close()
		return nil, "", nil, err
	}
	return reg, backend, kv, nil
}
