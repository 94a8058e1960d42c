package service

import (
	"context"
	"fmt"

	"github.com/rmqha/rmqha/libs/broker"
	"github.com/rmqha/rmqha/libs/discovery"
	"github.com/rmqha/rmqha/libs/failover"
	"github.com/sirupsen/logrus"
)

// brokerNode is the broker as the failover election drives it; the node id is the slave
// brokerId the broker was configured with.
type brokerNode struct{ b *broker.Broker }

func (n brokerNode) IsMaster() bool { return n.b.IsMaster() }
func (n brokerNode) Epoch() int64   { return n.b.Epoch() }
func (n brokerNode) MaxOffset() int64 {
	return n.b.Store().MaxOffset()
}
func (n brokerNode) Promote(ctx context.Context, epoch int64) (int64, error) {
	return n.b.Promote(ctx, epoch)
}
func (n brokerNode) Demote(ctx context.Context) error { return n.b.Demote(ctx) }
func (n brokerNode) FenceWrites(reason string)        { n.b.FenceWrites(reason) }
func (n brokerNode) UnfenceWrites()                   { n.b.UnfenceWrites() }
func (n brokerNode) Healthy() error                   { return n.b.Healthy() }
func (n brokerNode) HAAddr() string                   { return n.b.HAServerAddr() }
func (n brokerNode) InSync() []int64                  { return n.b.InSyncSlaves() }
func (n brokerNode) CaughtUp(node int64) bool         { return n.b.SlaveCaughtUp(node) }
func (n brokerNode) Follow(haAddr, addr string) {
	n.b.LearnMaster(haAddr)
	n.b.LearnMasterAddr(addr)
}

// checkFailover refuses enableFailover on a node not configured as SLAVE: every node of a
// failover group starts as a slave and the election promotes one.
func checkFailover(cfg broker.Config) error {
	if cfg.EnableFailover && cfg.BrokerRole != broker.RoleSlave {
		return fmt.Errorf("enableFailover=true needs brokerRole=SLAVE (brokerId = the node's id); the election promotes one node, got brokerRole=%s", cfg.BrokerRole)
	}
	return nil
}

// startFailover runs the election when enableFailover is set; it needs CONSUL_HTTP_ADDR.
// It returns the function that stops it (a master fences and releases the lock first).
func startFailover(ctx context.Context, b *broker.Broker, cfg broker.Config, environ []string, log logrus.FieldLogger) (func(), error) {
	if !cfg.EnableFailover {
		return func() {}, nil
	}
	addr := envValue(environ, "CONSUL_HTTP_ADDR")
	if addr == "" {
		return nil, fmt.Errorf("enableFailover=true needs CONSUL_HTTP_ADDR")
	}
	client, err := discovery.NewClient(addr)
	if err != nil {
		return nil, fmt.Errorf("consul client: %w", err)
	}
	b.SetPromotion(broker.PromotionConfig{MasterRole: cfg.FailoverMasterRole, SlaveID: cfg.BrokerID})
	fc := failover.DefaultConfig()
	fc.Cluster, fc.BrokerName, fc.Node, fc.Addr = cfg.BrokerClusterName, cfg.BrokerName, cfg.BrokerID, b.AdvertisedAddr()
	fc.LeaseTTL, fc.SafetyMargin, fc.Unclean = cfg.FailoverLeaseTTL, cfg.FailoverSafetyMargin, cfg.UncleanFailover
	if fc.PassInterval >= fc.LeaseTTL-fc.SafetyMargin {
		fc.PassInterval = (fc.LeaseTTL - fc.SafetyMargin) / 4
	}
	fc.Logger = log
	e, err := failover.New(fc, failover.NewConsul(client), brokerNode{b})
	if err != nil {
		return nil, err
	}
	ectx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.Run(ectx)
	}()
	b.SetFailoverStatus(func() any { return e.Status() })
	log.WithFields(logrus.Fields{"consul": addr, "lock": failover.LeaderKey(fc.Cluster, fc.BrokerName),
		"leaseTtl": fc.LeaseTTL.String(), "safetyMargin": fc.SafetyMargin.String(), "unclean": fc.Unclean}).Info("automatic failover on")
	return func() { cancel(); <-done }, nil
}
