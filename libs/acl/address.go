package acl

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// AddressPattern is one whiteRemoteAddress or globalWhiteRemoteAddresses entry, in the forms
// RocketMQ's RemoteAddressStrategyFactory accepts:
//
//	""                              matches nothing (an account without a white address)
//	*   *.*.*.*   *:*:*:*:*:*:*:*   matches every address
//	192.168.0.1   ::1               one address (IPv6 in any notation)
//	192.168.0.1,192.168.0.2         a list of addresses (IPv4 or IPv6)
//	192.168.0.{1,2,3}               a list by its last part (1050::300c:{1,2,3} for IPv6)
//	192.168.1.1-100  192.168.*.*    a range: literal leading parts, then one part that is
//	192.100-150.*.*                 "*" or "a-b", then only "*" parts (IPv4 has four parts)
//	1050::0005:0600:300c:1-200      IPv6 range: hex groups, then a last group "a-b" and/or
//	1050:0005:0600:300c:3261:*      a final ":*"; with "::" the prefix is expanded so that
//	1050::300c:1-20:*               the range and "*" are the last groups, without "::"
//	                                the "*" stands for every remaining group
//
// Stricter than RocketMQ in one respect: RocketMQ reads any part after a range as "*"
// ("127.0.1-200.5" matches 127.0.50.9); here such a pattern is refused.
type AddressPattern struct {
	src  string
	kind patternKind
	// set holds the addresses of a one-address or list pattern (unmapped).
	set []netip.Addr
	// A range pattern: the first plen parts equal prefix; part plen is in [lo, hi] when
	// hasRange; the other parts are free. Parts are IPv4 octets or IPv6 16-bit groups.
	v6       bool
	prefix   [8]uint16
	plen     int
	hasRange bool
	lo, hi   uint16
}

type patternKind uint8

const (
	patternNone patternKind = iota
	patternAny
	patternSet
	patternRange
)

// ParseAddressPattern compiles one pattern (see AddressPattern); errors wrap ErrInvalidAddress.
func ParseAddressPattern(s string) (AddressPattern, error) {
	src := s
	s = strings.TrimSpace(s)
	p := AddressPattern{src: src}
	bad := func(why string) (AddressPattern, error) {
		return AddressPattern{}, fmt.Errorf("%w: %q: %s", ErrInvalidAddress, src, why)
	}
	switch {
	case s == "":
		p.kind = patternNone
		return p, nil
	case s == "*" || s == "*.*.*.*" || s == "*:*:*:*:*:*:*:*":
		p.kind = patternAny
		return p, nil
	case strings.HasSuffix(s, "}"):
		open := strings.IndexByte(s, '{')
		if open < 0 || strings.Count(s, "{") != 1 || strings.Count(s, "}") != 1 {
			return bad("a list in braces needs one {...} as its last part")
		}
		head := s[:open]
		if !(strings.HasSuffix(head, ".") || strings.HasSuffix(head, ":")) {
			return bad("the {...} list must be the last part, after a '.' or ':'")
		}
		items := strings.Split(s[open+1:len(s)-1], ",")
		for _, it := range items {
			if it = strings.TrimSpace(it); it == "" {
				return bad("empty item in the {...} list")
			}
			a, err := parseOneAddr(head + it)
			if err != nil {
				return bad(err.Error())
			}
			p.set = append(p.set, a)
		}
		if strings.HasSuffix(head, ".") && strings.Count(head, ".") != 3 {
			return bad("an IPv4 {...} list follows three literal parts")
		}
		p.kind = patternSet
		return p, nil
	case strings.Contains(s, ","):
		for _, it := range strings.Split(s, ",") {
			a, err := parseOneAddr(strings.TrimSpace(it))
			if err != nil {
				return bad(err.Error())
			}
			p.set = append(p.set, a)
		}
		p.kind = patternSet
		return p, nil
	case strings.ContainsAny(s, "*-"):
		var err error
		if strings.Contains(s, ":") {
			err = p.parseRange6(s)
		} else {
			err = p.parseRange4(s)
		}
		if err != nil {
			return bad(err.Error())
		}
		p.kind = patternRange
		return p, nil
	}
	a, err := parseOneAddr(s)
	if err != nil {
		return bad(err.Error())
	}
	p.set = []netip.Addr{a}
	p.kind = patternSet
	return p, nil
}

// MustParseAddressPattern is ParseAddressPattern for tests and constants; it panics on error.
func MustParseAddressPattern(s string) AddressPattern {
	p, err := ParseAddressPattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

func parseOneAddr(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IP address", s)
	}
	if a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%q has a zone", s)
	}
	return a.Unmap(), nil
}

// parseRange4 reads a.b.c.d with literal octets, then one "*" or "x-y", then "*" only.
func (p *AddressPattern) parseRange4(s string) error {
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return fmt.Errorf("an IPv4 range has four parts, got %d", len(parts))
	}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		switch {
		case p.hasRange:
			if part != "*" {
				return fmt.Errorf("part %d %q follows a range and must be *", i+1, part)
			}
		case i == 0 && (part == "*" || strings.Contains(part, "-")):
			return fmt.Errorf("the first part must be a number (use * alone for every address)")
		case part == "*":
			p.lo, p.hi, p.hasRange = 0, 255, true
		case strings.Contains(part, "-"):
			lo, hi, err := parseSpan(part, 10, 255)
			if err != nil {
				return fmt.Errorf("part %d: %v", i+1, err)
			}
			p.lo, p.hi, p.hasRange = lo, hi, true
		default:
			n, err := strconv.ParseUint(part, 10, 8)
			if err != nil {
				return fmt.Errorf("part %d %q is not 0..255", i+1, part)
			}
			p.prefix[p.plen] = uint16(n)
			p.plen++
		}
	}
	if !p.hasRange {
		return fmt.Errorf("no * or range part")
	}
	return nil
}

// parseRange6 reads hex groups (at most one "::"), then a last group "x-y" and/or a final
// ":*". With "::" the leading groups are expanded to leave exactly the range and "*" groups;
// without it, the groups after the range (or the "*") are all free, as RocketMQ matches them.
func (p *AddressPattern) parseRange6(s string) error {
	p.v6 = true
	// keepDouble restores a "::" that cutting off the last group left as a single ':'.
	keepDouble := func(rest string) string {
		if strings.HasSuffix(rest, ":") {
			return rest + ":"
		}
		return rest
	}
	star := strings.HasSuffix(s, ":*")
	if star {
		s = keepDouble(s[:len(s)-2])
	}
	if strings.Contains(s, "*") {
		return fmt.Errorf("* is allowed only as the last group")
	}
	rng := false
	if i := strings.LastIndexByte(s, ':'); i >= 0 && strings.Contains(s[i+1:], "-") {
		lo, hi, err := parseSpan(s[i+1:], 16, 0xffff)
		if err != nil {
			return err
		}
		p.lo, p.hi, rng = lo, hi, true
		s = keepDouble(s[:i])
	}
	if strings.Contains(s, "-") {
		return fmt.Errorf("a range is allowed only in the last group (or the one before a final :*)")
	}
	if !rng && !star {
		return fmt.Errorf("no * or range group")
	}
	if !rng {
		p.lo, p.hi = 0, 0xffff
	}
	p.hasRange = true
	groups, err := expandGroups(s, 8-boolInt(star)-boolInt(rng))
	if err != nil {
		return err
	}
	copy(p.prefix[:], groups)
	p.plen = len(groups)
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// expandGroups parses colon-separated hex groups; a "::" stands for as many zero groups as make
// the total want.
func expandGroups(s string, want int) ([]uint16, error) {
	if s == "" {
		return nil, fmt.Errorf("no leading groups")
	}
	if strings.Count(s, "::") > 1 || strings.Contains(s, ":::") {
		return nil, fmt.Errorf("more than one ::")
	}
	parse := func(part string) ([]uint16, error) {
		if part == "" {
			return nil, nil
		}
		var out []uint16
		for _, g := range strings.Split(part, ":") {
			if g == "" || len(g) > 4 {
				return nil, fmt.Errorf("group %q is not 1 to 4 hex digits", g)
			}
			n, err := strconv.ParseUint(g, 16, 16)
			if err != nil {
				return nil, fmt.Errorf("group %q is not hex", g)
			}
			out = append(out, uint16(n))
		}
		return out, nil
	}
	head, tail, double := strings.Cut(s, "::")
	h, err := parse(head)
	if err != nil {
		return nil, err
	}
	if !double {
		if len(h) > want {
			return nil, fmt.Errorf("%d groups leave no room for the range", len(h))
		}
		return h, nil
	}
	t, err := parse(tail)
	if err != nil {
		return nil, err
	}
	zeros := want - len(h) - len(t)
	if zeros < 1 {
		return nil, fmt.Errorf(":: stands for no group")
	}
	out := append(h, make([]uint16, zeros)...)
	return append(out, t...), nil
}

// parseSpan parses "lo-hi" in base, both within [0, max], lo <= hi.
func parseSpan(s string, base int, max uint64) (uint16, uint16, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok || a == "" || b == "" || strings.Contains(b, "-") {
		return 0, 0, fmt.Errorf("%q is not lo-hi", s)
	}
	lo, err1 := strconv.ParseUint(strings.TrimSpace(a), base, 16)
	hi, err2 := strconv.ParseUint(strings.TrimSpace(b), base, 16)
	if err1 != nil || err2 != nil || lo > max || hi > max || lo > hi {
		return 0, 0, fmt.Errorf("%q is not a range lo-hi with 0 <= lo <= hi <= %d", s, max)
	}
	return uint16(lo), uint16(hi), nil
}

// Match reports whether a (IPv4-mapped IPv6 addresses count as IPv4) matches the pattern.
func (p *AddressPattern) Match(a netip.Addr) bool {
	switch p.kind {
	case patternAny:
		return true
	case patternSet:
		a = a.Unmap()
		for _, x := range p.set {
			if x == a {
				return true
			}
		}
		return false
	case patternRange:
		a = a.Unmap()
		var parts [8]uint16
		if p.v6 {
			if !a.Is6() {
				return false
			}
			b := a.As16()
			for i := range parts {
				parts[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
			}
		} else {
			if !a.Is4() {
				return false
			}
			b := a.As4()
			for i := range b {
				parts[i] = uint16(b[i])
			}
		}
		for i := 0; i < p.plen; i++ {
			if parts[i] != p.prefix[i] {
				return false
			}
		}
		v := parts[p.plen]
		return v >= p.lo && v <= p.hi
	}
	return false
}

// MatchesAll reports whether the pattern is one of the match-everything forms.
func (p AddressPattern) MatchesAll() bool { return p.kind == patternAny }

// IsEmpty reports whether the pattern matches nothing (an empty whiteRemoteAddress).
func (p AddressPattern) IsEmpty() bool { return p.kind == patternNone }

// String is the pattern as written.
func (p AddressPattern) String() string { return p.src }
