package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func matches(t *testing.T, pattern string, addr string) bool {
	t.Helper()
	p, err := ParseAddressPattern(pattern)
	require.NoError(t, err, pattern)
	return p.Match(netip.MustParseAddr(addr))
}

// The forms of RocketMQ's RemoteAddressStrategyFactory, with the addresses its own tests use.
func TestAddressPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern string
		yes, no []string
	}{
		{"", nil, []string{"127.0.0.1", "::1"}},
		{"*", []string{"127.0.0.1", "10.1.2.3", "::1"}, nil},
		{"*.*.*.*", []string{"1.2.3.4"}, nil},
		{"*:*:*:*:*:*:*:*", []string{"::1", "1.2.3.4"}, nil},
		{"127.0.0.1", []string{"127.0.0.1", "::ffff:127.0.0.1"}, []string{"127.0.0.2", "::1"}},
		{" 127.0.0.1 ", []string{"127.0.0.1"}, nil},
		{"::1", []string{"::1", "0000:0000:0000:0000:0000:0000:0000:0001"}, []string{"::2", "127.0.0.1"}},
		{"1050:0000:0000:0000:0005:0600:300c:326b", []string{"1050::5:600:300c:326b"}, []string{"1050::5:600:300c:326c"}},
		{"127.0.0.1,127.0.0.2,127.0.0.3", []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}, []string{"127.0.0.0", "127.0.0.4"}},
		{"127.0.0.{1,2,3}", []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}, []string{"127.0.0.0", "127.0.0.4"}},
		{"192.168.1.{1}", []string{"192.168.1.1"}, []string{"192.168.1.2"}},
		{"1050::0005:0600:300c:1,1050::0005:0600:300c:2", []string{"1050:0000:0000:0000:0005:0600:300c:1", "1050::5:600:300c:2"}, []string{"1050::5:600:300c:3"}},
		{"1050::0005:0600:300c:{1,2,3}", []string{"1050:0000:0000:0000:0005:0600:300c:3"}, []string{"1050::5:600:300c:4", "1050::5:600:300c:0"}},
		{"127.0.0.1-200", []string{"127.0.0.1", "127.0.0.100", "127.0.0.200"}, []string{"127.0.0.0", "127.0.0.201", "127.0.1.1"}},
		{"127.0.0.*", []string{"127.0.0.0", "127.0.0.255"}, []string{"127.0.1.0", "128.0.0.1"}},
		{"127.0.1-200.*", []string{"127.0.1.0", "127.0.200.255", "127.0.77.5"}, []string{"127.0.0.1", "127.0.201.1"}},
		{"127.*.*.*", []string{"127.0.0.1", "127.255.255.255"}, []string{"126.0.0.1"}},
		{"192.100-150.*.*", []string{"192.130.0.2", "192.100.1.1", "192.150.255.255"}, []string{"192.99.0.1", "192.151.0.1"}},
		{"10.10.103.*", []string{"10.10.103.9"}, []string{"10.10.104.9", "::1"}},
		{"1050::0005:0600:300c:1-200", []string{"1050::5:600:300c:1", "1050::5:600:300c:200"}, []string{"1050::5:600:300c:0", "1050::5:600:300c:201"}},
		{"1050::0005:0600:300c:*", []string{"1050::5:600:300c:0", "1050::5:600:300c:ffff"}, []string{"1050::5:600:3001:1"}},
		{"1050::0005:0600:3001:*", []string{"1050::5:600:3001:7"}, []string{"1050::5:600:300c:7"}},
		{"1050::0005:0600:300c:1-200:*", []string{"1050::5:600:300c:1:0", "1050::5:600:300c:200:ffff"}, []string{"1050::5:600:300c:201:1", "1050::5:600:300c:0:1"}},
		{"1050:0005:0600:300c:3261:*", []string{"1050:5:600:300c:3261::", "1050:5:600:300c:3261:1:2:3"}, []string{"1050:5:600:300c:3262::1"}},
		{"1050::*", []string{"1050::1"}, []string{"1051::1"}},
		{"1050::1-20", []string{"1050::1", "1050::20"}, []string{"1050::21", "1050::1:1"}},
	} {
		for _, a := range c.yes {
			require.True(t, matches(t, c.pattern, a), "%q should match %s", c.pattern, a)
		}
		for _, a := range c.no {
			require.False(t, matches(t, c.pattern, a), "%q should not match %s", c.pattern, a)
		}
	}
	// Every IPv4 octet value around the bounds, as RocketMQ's range tests sweep them.
	p := MustParseAddressPattern("127.0.0.1-200")
	for i := 0; i < 256; i++ {
		require.Equal(t, i >= 1 && i <= 200, p.Match(netip.MustParseAddr(fmt.Sprintf("127.0.0.%d", i))), "octet %d", i)
	}
	p = MustParseAddressPattern("1050::0005:0600:300c:1-200")
	for i := 0; i < 0x10000; i += 7 {
		a := netip.MustParseAddr(fmt.Sprintf("1050::5:600:300c:%x", i))
		require.Equal(t, i >= 1 && i <= 0x200, p.Match(a), "group %x", i)
	}
	require.True(t, MustParseAddressPattern("*").MatchesAll())
	require.True(t, MustParseAddressPattern("").IsEmpty())
	require.Equal(t, "10.0.0.*", MustParseAddressPattern("10.0.0.*").String())
}

// Patterns RocketMQ refuses are refused, and so are ranges RocketMQ would read loosely.
func TestAddressPatternsRefused(t *testing.T) {
	for _, s := range []string{
		"256.0.0.1", "::1ggg", "127.0.0.1,2,3}", "::1,2,3}", "{192.168.1}", "{192.168.1.1}", "192.168.{1}",
		"127.0.0.2-1", "127.0.0.-1-200", "127.0.0.0-256", "127.0.0", "127.0.0.1.1-2", "*.0.0.1",
		"127.0.1-200.5", "127.0.*.1", "127.0.0.1,", "127.0.0.{1,,2}", "127.0.0.{1,300}", "fe80::1%eth0",
		"1050::*:1", "1050::1-2:3", "1:2:3:4:5:6:7:8:*", "1::2::*", "1050::ffff1-2", "1050::2-1",
		"1050:::1-2", ":*", "a.b.c.d", "127.0.0.{a}", "1-2.0.0.0",
	} {
		_, err := ParseAddressPattern(s)
		require.Error(t, err, "%q", s)
		require.True(t, errors.Is(err, ErrInvalidAddress), "%q: %v", s, err)
	}
}

func FuzzAddressPattern(f *testing.F) {
	for _, s := range []string{"*", "127.0.0.1", "127.0.0.{1,2}", "192.168.1-100.*", "1050::300c:1-200:*", "1050:5:600:300c:3261:*", "::1", "a,b", "1.2.3.4-5"} {
		f.Add(s, []byte{127, 0, 0, 1}, []byte{0x10, 0x50, 0, 0, 0, 0, 0, 0, 0, 5, 6, 0, 0x30, 0x0c, 0, 1})
	}
	f.Fuzz(func(t *testing.T, s string, a4, a6 []byte) {
		p, err := ParseAddressPattern(s) // never panics
		if err != nil {
			if !errors.Is(err, ErrInvalidAddress) {
				t.Fatalf("%q: unclassified error %v", s, err)
			}
			return
		}
		var b4 [4]byte
		var b16 [16]byte
		copy(b4[:], a4)
		copy(b16[:], a6)
		_ = p.Match(netip.AddrFrom4(b4))
		_ = p.Match(netip.AddrFrom16(b16))
		_ = p.Match(netip.Addr{})
		// A compiled pattern compiles again from its text to the same matcher.
		q, err := ParseAddressPattern(p.String())
		if err != nil || q.Match(netip.AddrFrom4(b4)) != p.Match(netip.AddrFrom4(b4)) {
			t.Fatalf("%q does not recompile the same: %v", s, err)
		}
	})
}
