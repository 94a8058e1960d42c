package broker

import (
	"strings"

	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/broker/txn"
	"github.com/rmqha/rmqha/libs/commitlog"
)

// The plain-message fast path of a send's properties
//
// fixProperties parses a message's properties into a map, edits it (WAIT out, TIMER_SOURCE
// out, CLUSTER in) and serialises it again: four or five allocations per message, for a map
// that most sends then only read UNIQ_KEY from. A message none of whose properties asks for
// anything more (no transaction, delay or timer property) is rewritten by one scan instead:
// its pairs are copied in their order, the three edited ones left out, CLUSTER appended. The
// stored string holds the same pairs as the general path's (RocketMQ's broker serialises its
// property map in hash order, so no reader relies on an order); FuzzPlainProperties checks
// the two paths agree on every input the fast one takes. Anything unusual (a malformed or
// empty pair, a repeated name, more than maxPlainPairs pairs) goes down the general path,
// which decides as before.

// maxPlainPairs bounds the pairs the fast path compares for repeats (quadratic, on the stack).
const maxPlainPairs = 24

// plainSend is what a send needs from the properties of a plain message.
type plainSend struct {
	props string // as stored
	uniq  string // UNIQ_KEY, "" when absent
	wait  bool   // the sender waits for the store (WAIT is not "false")
}

// isSpecialProperty reports the names whose presence makes the send more than an append.
func isSpecialProperty(k string) bool {
	switch k {
	case txn.PropTranMsg, propDelay, timer.PropertyDeliverMs, timer.PropertyDelaySec, timer.PropertyDelayMs, timer.PropertyOutMs:
		return true
	}
	return false
}

// plainProperties rewrites props for storage as fixProperties does, or reports false when the
// message needs the general path.
func (b *Broker) plainProperties(props string) (plainSend, bool) {
	out := plainSend{wait: true}
	var names [maxPlainPairs]string
	n := 0
	dropped := false
	for rest := props; rest != ""; {
		pair := rest
		if i := strings.IndexByte(rest, propPairSep); i >= 0 {
			pair, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
			dropped = true // the last pair gets its separator: rebuilt
		}
		k, v, ok := strings.Cut(pair, string(propNameSep))
		if !ok || k == "" || v == "" || n == maxPlainPairs || isSpecialProperty(k) {
			return plainSend{}, false
		}
		for _, seen := range names[:n] {
			if seen == k {
				return plainSend{}, false
			}
		}
		names[n] = k
		n++
		switch k {
		case propWait:
			out.wait = !strings.EqualFold(v, "false")
			dropped = true
		case timer.PropertySource, propCluster:
			dropped = true
		case propUniqKey:
			out.uniq = v
		}
	}
	switch {
	case props == "":
		out.props = b.clusterPair
	case !dropped:
		out.props = props + b.clusterPair
	default:
		var sb strings.Builder
		sb.Grow(len(props) + 1 + len(b.clusterPair))
		for rest := props; rest != ""; {
			pair := rest
			if i := strings.IndexByte(rest, propPairSep); i >= 0 {
				pair, rest = rest[:i], rest[i+1:]
			} else {
				rest = ""
			}
			switch k, _, _ := strings.Cut(pair, string(propNameSep)); k {
			case propWait, timer.PropertySource, propCluster:
				continue
			}
			sb.WriteString(pair)
			sb.WriteByte(propPairSep)
		}
		sb.WriteString(b.clusterPair)
		out.props = sb.String()
	}
	return out, true
}

// Property separators (RocketMQ's NAME_VALUE_SEPARATOR and PROPERTY_SEPARATOR).
const (
	propNameSep = '\x01'
	propPairSep = '\x02'
)

// clusterPairOf is the CLUSTER property every stored message gets, as a serialised pair.
func clusterPairOf(cluster string) string {
	if cluster == "" {
		return ""
	}
	return string(commitlog.AppendProperties(nil, map[string]string{propCluster: cluster}))
}
