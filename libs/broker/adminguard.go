package broker

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
)

// Admin writes with ACL off. RocketMQ leaves a broker without ACL open to every request;
// here the requests that change what the broker serves or where consumers stand (topics and
// their permissions, subscription groups, runtime configuration, consumer offsets, stored
// files) must still be signed, with the cluster registration secret under access key
// acl.BrokerAccessKey (RocketMQ's HMAC-SHA1 request signature, so rocketmq-client-go's admin
// WithCredentials and Java's tools.yml can sign them too), unless adminAllowUnauthenticated
// is set. Sends, pulls, offset commits of consumers and read-only lookups stay open, as in
// RocketMQ. With aclEnable=true the ACL guard decides instead (these codes need an admin
// account there: acl.NeedsAdmin).
//
// A signed request carries no timestamp (the standard tools could not add one), so a
// recorded one can be replayed by whoever recorded it; TLS on the remoting port
// (tls.server.mode=enforcing) keeps it from being recorded.

// adminWriteCodes are the codes adminGuard authenticates.
var adminWriteCodes = [...]int32{
	remoting.UpdateAndCreateTopic, remoting.UpdateBrokerConfig, remoting.DeleteTopicInBroker,
	remoting.UpdateAndCreateSubscriptionGroup, remoting.DeleteSubscriptionGroup,
	remoting.InvokeBrokerToResetOffset, remoting.CloneGroupOffset,
}

// isAdminWrite reports whether code is one of adminWriteCodes (a scan: the list is short and
// the send path never reaches it with a match).
func isAdminWrite(code int32) bool {
	for _, c := range adminWriteCodes {
		if c == code {
			return true
		}
	}
	return false
}

// adminGuard is the remoting guard of a broker with ACL off.
type adminGuard struct {
	secret        string // "" without a registration secret
	allowUnsigned bool
	refused       func(req *remoting.Command, peer string, reason string)
}

// Admit implements remoting.Guard.
func (g *adminGuard) Admit(c *remoting.ServerConn, req *remoting.Command) *remoting.Command {
	if !isAdminWrite(req.Code) {
		return nil
	}
	ak, sig := req.Ext(acl.ExtAccessKey), req.Ext(acl.ExtSignature)
	var reason string
	switch {
	case ak == "" && sig == "" && g.allowUnsigned:
		return nil
	case ak == "" && sig == "":
		reason = fmt.Sprintf("%s changes this broker: sign it with the registration secret (mqadmin -registrationSecretFile; "+
			"access key %s) or set aclEnable=true and use an admin account", remoting.RequestName(req.Code), acl.BrokerAccessKey)
	case ak != acl.BrokerAccessKey:
		reason = fmt.Sprintf("access key %s is not %s; with aclEnable=false admin requests are signed with the registration secret", acl.QuoteKey(ak), acl.BrokerAccessKey)
	case g.secret == "":
		reason = "this broker has no registrationSecret to verify " + remoting.RequestName(req.Code) + " with"
	case !acl.VerifySignature(req, g.secret):
		reason = "signature does not verify (a different registrationSecret?)"
	default:
		return nil
	}
	if g.refused != nil {
		g.refused(req, c.RemoteAddr(), reason)
	}
	return remoting.NewResponse(req, remoting.NoPermission, reason)
}

// AdmitsWithoutExt implements remoting.ExtFreeGuard: only admin writes have their signature
// checked (over the ExtFields map).
func (g *adminGuard) AdmitsWithoutExt(code int32) bool { return !isAdminWrite(code) }

// newAdminGuard builds the ACL-off guard and logs how admin writes are authenticated.
func (b *Broker) newAdminGuard() (*adminGuard, error) {
	secret, err := b.cfg.registrationSecret()
	if err != nil {
		return nil, err
	}
	g := &adminGuard{secret: secret, allowUnsigned: b.cfg.AdminAllowUnauthenticated}
	switch {
	case g.allowUnsigned:
		b.log.WithField("key", "adminAllowUnauthenticated").
			Warn("adminAllowUnauthenticated=true: any client that reaches listenPort may create and delete topics and groups, change this broker's configuration and reset consumer offsets")
	case secret == "":
		b.log.WithField("key", "registrationSecret").
			Warn("no registrationSecret: admin writes (topic and group changes, updateBrokerConfig, offset resets) are refused until one is set, aclEnable=true, or adminAllowUnauthenticated=true")
	}
	var last atomic.Int64 // unix ns of the last refusal logged
	g.refused = func(req *remoting.Command, peer, reason string) {
		b.metrics.adminRefused.WithLabelValues(remoting.RequestName(req.Code)).Inc()
		now := time.Now().UnixNano()
		if prev := last.Load(); now-prev >= int64(time.Second) && last.CompareAndSwap(prev, now) {
			b.log.WithFields(logrus.Fields{"peer": peer, "request": remoting.RequestName(req.Code)}).
				Warn("admin request refused: " + reason)
		}
	}
	return g, nil
}
