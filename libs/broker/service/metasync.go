package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/broker"
	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/metasync"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// doorbellPeriod bounds how often a master rings metasync's doorbell while
// its tables keep changing (consumer offsets move every few seconds).
const doorbellPeriod = 200 * time.Millisecond

// startMetaSync wires the broker into the group's metadata sync:
//   - a master rings metasync's doorbell on NATS whenever one of its four
//     tables changes version, so metasync pulls at once instead of on its
//     schedule;
//   - a slave runs the metasync follower: announced versions are fetched
//     from metasync and applied (topics and groups replaced whole, offsets
//     never lowered), with a direct pull from its master as the fallback.
//
// It returns the function that stops what it started.
func startMetaSync(ctx context.Context, b *broker.Broker, cfg broker.Config, environ []string, log logrus.FieldLogger) func() {
	natsURL := cfg.NatsURL
	if natsURL == "" {
		natsURL = envValue(environ, "NATS_URL")
	}
	l := log.WithField("component", "metasync")
	var bus *metasync.NATSBus
	if natsURL != "" {
		var err error
		if bus, err = metasync.DialNATS(natsURL, cfg.BrokerName+"-"+cfg.BrokerRole); err != nil {
			l.WithError(err).Warn("NATS unavailable: metadata announcements off")
			bus = nil
		}
	}
	if cfg.IsMaster() {
		if bus == nil {
			return func() {}
		}
		done := make(chan struct{})
		go ringDoorbell(ctx, done, b, bus, cfg, l)
		return func() { <-done; bus.Close() }
	}
	fc := metasync.DefaultFollowerConfig()
	fc.Cluster, fc.BrokerName, fc.BrokerID = cfg.BrokerClusterName, cfg.BrokerName, cfg.BrokerID
	fc.Tables = b.Tables()
	if len(cfg.MetasyncAddrs) > 0 {
		urls := make([]string, 0, len(cfg.MetasyncAddrs))
		for _, a := range cfg.MetasyncAddrs {
			if !strings.Contains(a, "://") {
				a = "http://" + a
			}
			urls = append(urls, a)
		}
		fc.Snapshots = metasync.NewHTTPSnapshots(urls...)
	}
	rcc := remoting.DefaultClientConfig()
	rcc.TLS = b.ClientTLS()
	rcc.Signer = acl.CredentialsSigner(cfg.Credentials()) // GET_ALL_* needs an admin account on an ACL-enabled master
	rc := remoting.NewClient(rcc)
	fc.Master = &metasync.RemotingMaster{Client: rc, Addr: func() string { return b.Status().MasterAddr }}
	if bus != nil {
		fc.Bus = bus
	}
	if cfg.MetasyncFallbackInterval > 0 {
		fc.FallbackInterval = cfg.MetasyncFallbackInterval
	}
	// A slave promoted by automatic failover owns its tables: the follower stands still
	// while the broker is master and follows again after a demotion.
	fc.Active = func() bool { return !b.IsMaster() }
	fc.ResetStatePath = filepath.Join(cfg.StorePathRootDir, "config", "metasyncResets.json")
	fc.Logger = l
	f, err := metasync.NewFollower(fc)
	if err == nil {
		err = f.Start()
	}
	if err != nil {
		l.WithError(err).Error("metadata follower not started: this slave's topics, groups and offsets will not follow the master")
		rc.Close()
		if bus != nil {
			bus.Close()
		}
		return func() {}
	}
	b.SetBeforePromote(f.SyncNow) // a promoted slave applies the newest metadata first
	l.WithFields(logrus.Fields{"nats": natsURL, "metasync": cfg.MetasyncAddrs}).Info("following the master's metadata")
	// A slave that automatic failover promotes rings the doorbell like a configured master.
	bellDone := make(chan struct{})
	if bus != nil {
		go ringDoorbell(ctx, bellDone, b, bus, cfg, l)
	} else {
		close(bellDone)
	}
	return func() {
		_ = f.Close()
		rc.Close()
		<-bellDone
		if bus != nil {
			bus.Close()
		}
	}
}

func ringDoorbell(ctx context.Context, done chan struct{}, b *broker.Broker, bus *metasync.NATSBus, cfg broker.Config, l logrus.FieldLogger) {
	defer close(done)
	t := b.Tables()
	subject := metasync.ChangedSubject(metasync.DefaultSubjectPrefix, cfg.BrokerClusterName, cfg.BrokerName)
	versions := func() [4]meta.DataVersion {
		return [4]meta.DataVersion{t.Topics.DataVersion(), t.Groups.DataVersion(), t.Offsets.DataVersion(), t.Delay.DataVersion()}
	}
	last := versions()
	tick := time.NewTicker(doorbellPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if v := versions(); v != last {
			last = v
			if !b.IsMaster() {
				continue // a slave's tables change by following; only the master rings
			}
			if err := bus.Publish(subject, nil); err != nil {
				l.WithError(err).Debug("doorbell not rung")
			}
		}
	}
}

func envValue(environ []string, key string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	if environ == nil {
		return os.Getenv(key)
	}
	return ""
}
