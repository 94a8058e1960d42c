package broker

import (
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

// brokerPermission (RocketMQ's BrokerConfig key of the same name) is the broker's own PermName
// bits, 6 by default. As in RocketMQ:
//
//   - registrations carry every topic's perm limited to the broker's (perm & brokerPermission;
//     RocketMQ writes brokerPermission itself, the mask keeps a read-only topic read-only and
//     TBW102's inherit bit), so without write the routes offer no writable queue here and
//     producers move to the other brokers of the topic;
//   - a send or send-back without write answers NO_PERMISSION "the broker[<brokerIP1>] sending
//     message is forbidden" (RocketMQ refuses only sends to ordered topics and stores the others
//     a producer with an old route still sends; refusing them all keeps a drained broker
//     drained, and NO_PERMISSION is a code RocketMQ's producers retry on another broker);
//   - a pull without read answers NO_PERMISSION "the broker[<brokerIP1>] pulling message is
//     forbidden".
//
// A change by UPDATE_BROKER_CONFIG registers at once with a new registration DataVersion (name
// servers, Consul's registry among them, rebuild a master's queue data only when its version
// moves, as RocketMQ's nextVersion before its registerBrokerAll). The value is this process's:
// a promoted slave keeps its own.

// fullPermission is the default brokerPermission, under which registrations are unchanged.
const fullPermission = route.PermRead | route.PermWrite

// registeredTopics is the topic table a registration sends: the broker's own, each perm
// masked by brokerPermission, and a DataVersion that differs whenever the mask changed.
func (b *Broker) registeredTopics() route.TopicConfigSerializeWrapper {
	w := b.tables.Topics.Wrapper()
	perm := b.live.brokerPermission.Load()
	if perm == fullPermission {
		return w
	}
	mask := perm | route.PermInherit
	for name, tc := range w.TopicConfigTable {
		tc.Perm &= mask
		w.TopicConfigTable[name] = tc
	}
	// The time of the last change stands in for the table's own: a masked table never has the
	// version of an unmasked one, nor of one masked otherwise.
	stamp := b.live.permStamp.Load()
	if stamp == w.DataVersion.Timestamp {
		stamp++
	}
	w.DataVersion.Timestamp = stamp
	return w
}

// brokerHost is brokerIP1, the address RocketMQ names in its permission remarks.
func (b *Broker) brokerHost() string { return b.cfg.BrokerIP1 }

// refuseUnwritable answers a send or send-back on a broker without write permission; it
// reports whether it did.
func (b *Broker) refuseUnwritable(w remoting.ResponseWriter, req *remoting.Command) bool {
	if route.IsWriteable(b.live.brokerPermission.Load()) {
		return false
	}
	b.sendRejects.Add(1)
	b.reply(w, req, remoting.NoPermission, "the broker["+b.brokerHost()+"] sending message is forbidden")
	return true
}

// readable reports whether pulls are served (brokerPermission has read).
func (b *Broker) readable() bool { return route.IsReadable(b.live.brokerPermission.Load()) }
