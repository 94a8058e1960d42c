package acl

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/rmqha/rmqha/libs/remoting"
)

// Table is one loaded plain_acl.yml: the global white addresses and the accounts. It is
// immutable once parsed; a reload builds a new one.
type Table struct {
	// GlobalWhite are the globalWhiteRemoteAddresses patterns: requests from them skip every
	// check (no signature, no permission), as in RocketMQ.
	GlobalWhite []AddressPattern
	// Digest is the SHA-256 of the file bytes the table was parsed from.
	Digest [32]byte

	accounts map[string]*Account
	order    []string
}

// Account is one entry of accounts.
type Account struct {
	AccessKey string
	SecretKey string
	// WhiteRemoteAddress: this account's requests from a matching address skip the signature
	// and permission checks (RocketMQ's rule). Empty matches nothing.
	WhiteRemoteAddress AddressPattern
	// Admin accounts may send the admin request codes (NeedsAdmin); an admin account that
	// lists no topicPerms and no groupPerms may also use every topic and group.
	Admin bool
	// DefaultTopicPerm and DefaultGroupPerm apply to topics and groups not listed. DENY when
	// the file leaves them out.
	DefaultTopicPerm Perm
	DefaultGroupPerm Perm
	// TopicPerms and GroupPerms are the listed permissions (groups by name, without %RETRY%).
	TopicPerms map[string]Perm
	GroupPerms map[string]Perm

	verifiers *verifierPool
}

func (a *Account) init() { a.verifiers = newVerifierPool(a.SecretKey) }

// Verify reports whether req carries this account's valid signature.
func (a *Account) Verify(req *remoting.Command) bool {
	if a.verifiers == nil {
		a.init()
	}
	return a.verifiers.verify(req)
}

// perm returns what the account holds on a topic or group, and whether that came from the
// default.
func (a *Account) perm(name string, group bool) (Perm, bool) {
	m, def := a.TopicPerms, a.DefaultTopicPerm
	if group {
		m, def = a.GroupPerms, a.DefaultGroupPerm
	}
	if p, ok := m[name]; ok {
		return p, false
	}
	return def, true
}

// NewTable builds a table from accounts and global white patterns (tests and programs that
// do not read a file). Access keys must be unique.
func NewTable(global []AddressPattern, accounts ...*Account) (*Table, error) {
	t := &Table{GlobalWhite: global, accounts: map[string]*Account{}}
	for _, a := range accounts {
		if _, dup := t.accounts[a.AccessKey]; dup {
			return nil, fmt.Errorf("%w: accessKey %q given twice", ErrInvalidAccount, a.AccessKey)
		}
		a.init()
		t.accounts[a.AccessKey] = a
		t.order = append(t.order, a.AccessKey)
	}
	return t, nil
}

// Account returns the account with accessKey, or nil.
func (t *Table) Account(accessKey string) *Account { return t.accounts[accessKey] }

// Accounts lists the accounts in file order.
func (t *Table) Accounts() []*Account {
	out := make([]*Account, 0, len(t.order))
	for _, k := range t.order {
		out = append(out, t.accounts[k])
	}
	return out
}

// Reason is why a request was let through or refused; its String is the metrics label.
type Reason uint8

// Reasons. The first three admit, the others refuse.
const (
	// ReasonGlobalWhite: the remote address matches globalWhiteRemoteAddresses.
	ReasonGlobalWhite Reason = iota
	// ReasonWhiteAddress: the remote address matches the named account's whiteRemoteAddress.
	ReasonWhiteAddress
	// ReasonSigned: valid signature, and the account holds every permission needed.
	ReasonSigned
	// ReasonNoAccessKey: no AccessKey field.
	ReasonNoAccessKey
	// ReasonUnknownAccessKey: the access key is not in the table.
	ReasonUnknownAccessKey
	// ReasonBadSignature: missing or wrong Signature.
	ReasonBadSignature
	// ReasonAdminRequired: an admin request code from an account that is not admin.
	ReasonAdminRequired
	// ReasonNoPermission: a topic or group permission the account does not hold.
	ReasonNoPermission
	// ReasonBadRequest: the resources of the request cannot be read (a heartbeat body that
	// does not decode).
	ReasonBadRequest

	numReasons
)

var reasonNames = [numReasons]string{
	"global_white_address", "white_address", "signed",
	"no_access_key", "unknown_access_key", "bad_signature", "admin_required", "no_permission", "bad_request",
}

// String is the reason's metrics label.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Allowed reports whether the reason admits the request.
func (r Reason) Allowed() bool { return r <= ReasonSigned }

// Decision is the outcome of Decide. Everything but Reason is detail for the refusal remark.
type Decision struct {
	Reason    Reason
	Code      int32
	AccessKey string
	// For ReasonNoPermission: the resource, whether it is a group, what was needed, what the
	// account holds and whether that came from its default.
	Resource string
	Group    bool
	Needed   Perm
	Held     Perm
	Default  bool
	// Detail explains ReasonBadRequest.
	Detail string
}

// Allowed reports whether the request may be served.
func (d Decision) Allowed() bool { return d.Reason.Allowed() }

// Remark is the NO_PERMISSION remark of a refusal (RocketMQ's wording, with what was missing).
func (d Decision) Remark() string {
	switch d.Reason {
	case ReasonNoAccessKey:
		return "No accessKey is configured"
	case ReasonUnknownAccessKey:
		return fmt.Sprintf("No acl config for %s", d.AccessKey)
	case ReasonBadSignature:
		return fmt.Sprintf("Check signature failed for accessKey=%s", d.AccessKey)
	case ReasonAdminRequired:
		return fmt.Sprintf("Need admin permission for request code=%d (%s), but accessKey=%s is not", d.Code, remoting.RequestName(d.Code), d.AccessKey)
	case ReasonNoPermission:
		kind := "topic"
		if d.Group {
			kind = "group"
		}
		dflt := ""
		if d.Default {
			dflt = "default "
		}
		return fmt.Sprintf("No %spermission for %s:%s (%s needs %s, accessKey=%s holds %s)",
			dflt, kind, d.Resource, remoting.RequestName(d.Code), d.Needed, d.AccessKey, d.Held)
	case ReasonBadRequest:
		return fmt.Sprintf("Cannot check permissions of %s: %s", remoting.RequestName(d.Code), d.Detail)
	}
	return ""
}

// traceTopic is the message-trace topic: a signed send into it needs no topic permission
// (RocketMQ's rule, so tracing works for every producer).
const traceTopic = "RMQ_SYS_TRACE_TOPIC"

// Decide is the ACL decision for req from remote, in RocketMQ's order:
//
//  1. remote matches a global white address: allowed, nothing else is looked at;
//  2. no AccessKey: refused; an access key not in the table: refused;
//  3. remote matches the account's whiteRemoteAddress: allowed (no signature needed);
//  4. the Signature must verify under the account's secret key;
//  5. admin request codes (NeedsAdmin) need an admin account;
//  6. every resource the request touches (Needs) must be granted: listed permission, else the
//     account's default; DENY refuses; a retry topic %RETRY%g is the group g. Sends into
//     RMQ_SYS_TRACE_TOPIC skip this step; an admin account without topicPerms and groupPerms
//     holds everything.
//
// It reads only its arguments: no clock, no I/O.
func (t *Table) Decide(remote netip.Addr, req *remoting.Command) Decision {
	d := Decision{Code: req.Code}
	for i := range t.GlobalWhite {
		if t.GlobalWhite[i].Match(remote) {
			d.Reason = ReasonGlobalWhite
			return d
		}
	}
	ak := req.ExtFields[ExtAccessKey]
	d.AccessKey = ak
	if ak == "" {
		d.Reason = ReasonNoAccessKey
		return d
	}
	a := t.accounts[ak]
	if a == nil {
		d.Reason = ReasonUnknownAccessKey
		return d
	}
	if a.WhiteRemoteAddress.Match(remote) {
		d.Reason = ReasonWhiteAddress
		return d
	}
	if !a.Verify(req) {
		d.Reason = ReasonBadSignature
		return d
	}
	if NeedsAdmin(req.Code) && !a.Admin {
		d.Reason = ReasonAdminRequired
		return d
	}
	if a.Admin && a.TopicPerms == nil && a.GroupPerms == nil {
		d.Reason = ReasonSigned
		return d
	}
	var ns Needs
	if err := ns.Read(req); err != nil {
		d.Reason, d.Detail = ReasonBadRequest, err.Error()
		return d
	}
	if ns.tracePub {
		d.Reason = ReasonSigned
		return d
	}
	for i := 0; i < ns.Len(); i++ {
		n := ns.At(i)
		held, dflt := a.perm(n.Name, n.Group)
		if !held.Grants(n.Perm) {
			d.Reason = ReasonNoPermission
			d.Resource, d.Group, d.Needed, d.Held, d.Default = n.Name, n.Group, n.Perm, held, dflt
			return d
		}
	}
	d.Reason = ReasonSigned
	return d
}

// formatCode is the request code for log fields.
func formatCode(code int32) string {
	return strconv.Itoa(int(code)) + " " + remoting.RequestName(code)
}
