package broker

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// triggerRegister asks the registration loop to register with every name server soon (after a
// topic change); several triggers coalesce into one round.
func (b *Broker) triggerRegister() {
	select {
	case b.regTrigger <- struct{}{}:
	default:
	}
}

// registerLoop registers at start, every registerNameServerPeriod and after topic changes.
// A slave still waiting to learn its master's HA address retries sooner (from 500 ms,
// doubling up to the period), so it starts replicating soon after its master registers.
func (b *Broker) registerLoop() {
	defer b.wg.Done()
	if len(b.cfg.NamesrvAddrs()) == 0 {
		return
	}
	period := b.cfg.registerPeriod()
	retry := 500 * time.Millisecond
	b.registerAll()
	for {
		wait := period
		if d := b.view().disc; d != nil && !d.known() {
			wait = min(retry, period)
			retry *= 2
		}
		t := time.NewTimer(wait)
		select {
		case <-b.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-b.regTrigger:
			t.Stop()
		}
		b.registerAll()
	}
}

// RegisterNow registers with every name server at once and waits for the answers (tests and
// tools; the broker does this by itself).
func (b *Broker) RegisterNow() { b.registerAll() }

func (b *Broker) epoch() int64 {
	v := b.view()
	if v.master != nil {
		return v.master.Epoch()
	}
	if v.slave != nil {
		return v.slave.Status().LastEpoch
	}
	return 0
}

func (b *Broker) registerRequest() *remoting.Command {
	body := route.AppendRegisterBrokerBody(nil, route.RegisterBrokerBody{
		TopicConfigSerializeWrapper: b.registeredTopics(),
		FilterServerList:            []string{},
	})
	v := b.view()
	ext := map[string]string{
		"brokerName":   b.cfg.BrokerName,
		"brokerAddr":   b.brokerAddr,
		"clusterName":  b.cfg.BrokerClusterName,
		"haServerAddr": v.haServerAddr,
		"brokerId":     strconv.FormatInt(v.id, 10),
		"compressed":   "false",
		"bodyCrc32":    strconv.Itoa(int(route.BodyCRC32(body))),
		"epoch":        strconv.FormatInt(b.epoch(), 10),
	}
	// The status address lets the registry health-check a broker that is hung
	// (a paused process still completes TCP handshakes, but answers no HTTP).
	if h := b.statusAddr(); h != "" {
		ext["httpAddr"] = h
		if b.cfg.HTTPTLSEnable {
			ext["httpTls"] = "true" // health checks and tools use https
		}
	}
	return b.nsRequest(remoting.RegisterBroker, ext, body)
}

// registrationSigner signs what the broker sends to name servers: with the cluster
// registration secret under acl.BrokerAccessKey, or nothing without one (warned: name
// servers then refuse the broker unless they admit unauthenticated registrations). With ACL
// on, the broker's own accessKey/secretKey sign instead (acl.Signer(accessKey, secretKey));
// the name server's ACL authenticator verifies them and requires an admin account. The
// registration fields (nsRequest) are the same either way.
// nsSigner signs what the broker sends to name servers: REGISTER_BROKER and
// UNREGISTER_BROKER with the registration secret when one is set (access key rmqha-broker;
// name servers with ACL on let those through to their registration check), otherwise with
// the broker's accessKey/secretKey (an admin account of an ACL-enabled name server); every
// other request with accessKey/secretKey when they are set.
func (b *Broker) nsSigner() (func(*remoting.Command), error) {
	reg, err := b.registrationSigner()
	if err != nil {
		return nil, err
	}
	cred := b.signer()
	switch {
	case reg == nil:
		return cred, nil
	case cred == nil:
		return func(cmd *remoting.Command) {
			if isRegistration(cmd.Code) {
				reg(cmd)
			}
		}, nil
	}
	return func(cmd *remoting.Command) {
		if isRegistration(cmd.Code) {
			reg(cmd)
			return
		}
		cred(cmd)
	}, nil
}

func isRegistration(code int32) bool {
	return code == remoting.RegisterBroker || code == remoting.UnregisterBroker
}

func (b *Broker) registrationSigner() (func(*remoting.Command), error) {
	secret, err := b.cfg.registrationSecret()
	if err != nil {
		return nil, err
	}
	if secret == "" {
		if len(b.cfg.NamesrvAddrs()) > 0 && b.cfg.AccessKey == "" {
			b.log.WithField("key", "registrationSecret").Warn("no registrationSecret or registrationSecretFile: name-server registrations go unsigned; " +
				"name servers refuse them unless registrationAllowUnauthenticated=true")
		}
		return nil, nil
	}
	return acl.Signer(acl.BrokerAccessKey, secret), nil
}

// nsRequest builds a REGISTER_BROKER or UNREGISTER_BROKER with the registration fields the
// name server checks before it believes a signed one (acl.PrepareRegistration): a
// registrationTime after every earlier one from this process, even in the same millisecond
// or after the clock stepped back, and the digest binding the fields. The client's signer
// signs it when sent.
func (b *Broker) nsRequest(code int32, ext map[string]string, body []byte) *remoting.Command {
	req := remoting.NewRequest(code, ext, body)
	acl.PrepareRegistration(req, b.nextRegistrationTime())
	return req
}

func (b *Broker) nextRegistrationTime() int64 {
	for {
		last := b.regTime.Load()
		ts := max(b.now().UnixMilli(), last+1)
		if b.regTime.CompareAndSwap(last, ts) {
			return ts
		}
	}
}

// statusAddr is the advertised address of the status HTTP server ("" when
// off). It uses brokerIP2, the address meant for the group's own machines
// (Consul agents, admin tools), like the HA address: brokerIP1 is for clients
// and may not expose the status port (containers publish client ports only).
func (b *Broker) statusAddr() string {
	h := b.HTTPAddr()
	if h == "" {
		return ""
	}
	_, port, err := net.SplitHostPort(h)
	if err != nil {
		return ""
	}
	host := b.cfg.BrokerIP2
	if host == "" {
		host, _, _ = net.SplitHostPort(b.brokerAddr)
	}
	if host == "" {
		return ""
	}
	return net.JoinHostPort(host, port)
}

// registerAll sends REGISTER_BROKER to every name server in parallel. A slave learns its
// master's HA address (haServerAddr) and client address (masterAddr) from the answers.
func (b *Broker) registerAll() {
	b.regMu.Lock()
	defer b.regMu.Unlock()
	if b.unregistered {
		return
	}
	req := b.registerRequest()
	var wg sync.WaitGroup
	for _, ns := range b.cfg.NamesrvAddrs() {
		wg.Add(1)
		go func(ns string) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(b.ctx, 6*time.Second)
			defer cancel()
			resp, err := b.nsCli.Invoke(ctx, ns, req)
			log := b.log.WithField("namesrv", ns)
			if err != nil {
				log.WithError(err).Warn("register broker failed")
				return
			}
			if resp.Code != remoting.Success {
				log.WithFields(logrus.Fields{"code": remoting.ResponseName(resp.Code), "remark": resp.Remark}).Warn("register broker refused")
				return
			}
			log.Debug("registered with name server")
			if ma := resp.Ext("masterAddr"); ma != "" {
				b.masterAddr.Store(ma)
			}
			if d := b.view().disc; d != nil {
				if ha := resp.Ext("haServerAddr"); ha != "" {
					d.learn(ha)
				}
			}
		}(ns)
	}
	wg.Wait()
}

// unregisterAll sends UNREGISTER_BROKER to every name server (clean shutdown).
func (b *Broker) unregisterAll(ctx context.Context) {
	if len(b.cfg.NamesrvAddrs()) == 0 || b.brokerAddr == "" {
		return
	}
	ext := map[string]string{
		"brokerName":  b.cfg.BrokerName,
		"brokerAddr":  b.brokerAddr,
		"clusterName": b.cfg.BrokerClusterName,
		"brokerId":    strconv.FormatInt(b.view().id, 10),
	}
	b.regMu.Lock()
	defer b.regMu.Unlock()
	b.unregistered = true
	req := b.nsRequest(remoting.UnregisterBroker, ext, nil)
	var wg sync.WaitGroup
	for _, ns := range b.cfg.NamesrvAddrs() {
		wg.Add(1)
		go func(ns string) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			resp, err := b.nsCli.Invoke(cctx, ns, req)
			if err != nil {
				b.log.WithError(err).WithField("namesrv", ns).Warn("unregister broker failed")
				return
			}
			if resp.Code != remoting.Success {
				b.log.WithFields(logrus.Fields{"namesrv": ns, "code": remoting.ResponseName(resp.Code), "remark": resp.Remark}).Warn("unregister broker refused")
			}
		}(ns)
	}
	wg.Wait()
}

// regDiscovery is the hawire.Discovery of a slave: a static haMasterAddress when configured,
// otherwise the haServerAddr the name servers return on registration (and, with Consul, the
// address FollowMaster learns there).
type regDiscovery struct {
	*hawire.SwitchDiscovery
	static bool
}

func newRegDiscovery(static string) *regDiscovery {
	return &regDiscovery{SwitchDiscovery: hawire.NewSwitchDiscovery(static), static: static != ""}
}

// known reports whether a master address is known yet.
func (d *regDiscovery) known() bool { return d.Current() != "" }

// learn records an address from a registration answer; a static address is never replaced.
func (d *regDiscovery) learn(addr string) {
	if !d.static {
		d.Set(addr)
	}
}
