package acl

import "strings"

// Perm is a permission bit set, with RocketMQ's bit values (Permission.java): what an account
// holds on a topic or group, or what a request needs.
type Perm uint8

// Permission bits. DENY overrides everything an account holds; ANY is only ever needed (by a
// request that is satisfied by either PUB or SUB), never held.
const (
	PermDeny Perm = 1 << 0
	PermAny  Perm = 1 << 1
	PermPub  Perm = 1 << 2
	PermSub  Perm = 1 << 3
)

// Grants reports whether holding held satisfies a request needing needed: never when held
// carries DENY; for ANY, when held has PUB or SUB; otherwise when they share a bit.
func (held Perm) Grants(needed Perm) bool {
	if held&PermDeny != 0 {
		return false
	}
	if needed&PermAny != 0 {
		return held&(PermPub|PermSub) != 0
	}
	return needed&held != 0
}

// String is the permission as plain_acl.yml writes it ("PUB|SUB", "DENY", ...).
func (p Perm) String() string {
	switch {
	case p&PermDeny != 0:
		return "DENY"
	case p&(PermPub|PermSub) == PermPub|PermSub:
		return "PUB|SUB"
	case p&PermPub != 0:
		return "PUB"
	case p&PermSub != 0:
		return "SUB"
	case p&PermAny != 0:
		return "ANY"
	}
	return "NONE"
}

// ParsePerm parses a permission of plain_acl.yml: DENY, PUB, SUB, PUB|SUB or SUB|PUB
// (surrounding spaces ignored, case as written). RocketMQ reads anything else as DENY; a
// typo there would silently lock an account out, so it is refused here.
func ParsePerm(s string) (Perm, bool) {
	switch strings.TrimSpace(s) {
	case "DENY":
		return PermDeny, true
	case "PUB":
		return PermPub, true
	case "SUB":
		return PermSub, true
	case "PUB|SUB", "SUB|PUB":
		return PermPub | PermSub, true
	}
	return 0, false
}
