package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// RocketMQ's sample file parses to the table it describes.
func TestParseRocketMQSample(t *testing.T) {
	tbl, err := LoadFile("testdata/plain_acl.yml")
	require.NoError(t, err)
	require.Len(t, tbl.GlobalWhite, 2)
	require.Equal(t, "10.10.103.*", tbl.GlobalWhite[0].String())
	require.True(t, tbl.GlobalWhite[1].Match(netip.MustParseAddr("192.168.0.77")))
	require.False(t, tbl.GlobalWhite[1].Match(netip.MustParseAddr("192.168.1.77")))

	accts := tbl.Accounts()
	require.Len(t, accts, 2)
	a := accts[0]
	require.Equal(t, "RocketMQ", a.AccessKey)
	require.Equal(t, "12345678", a.SecretKey, "an integer scalar is the key as written")
	require.True(t, a.WhiteRemoteAddress.IsEmpty())
	require.False(t, a.Admin)
	require.Equal(t, PermDeny, a.DefaultTopicPerm)
	require.Equal(t, PermSub, a.DefaultGroupPerm)
	require.Equal(t, map[string]Perm{"topicA": PermDeny, "topicB": PermPub | PermSub, "topicC": PermSub}, a.TopicPerms)
	require.Equal(t, map[string]Perm{"groupA": PermDeny, "groupB": PermPub | PermSub, "groupC": PermSub}, a.GroupPerms)

	b := tbl.Account("rocketmq2")
	require.Same(t, accts[1], b)
	require.True(t, b.Admin)
	require.True(t, b.WhiteRemoteAddress.Match(netip.MustParseAddr("192.168.1.3")))
	require.Equal(t, PermDeny, b.DefaultTopicPerm, "a missing default is DENY, as RocketMQ")
	require.Equal(t, PermDeny, b.DefaultGroupPerm)
	require.Nil(t, b.TopicPerms)
	require.Nil(t, tbl.Account("nobody"))
}

func TestParseForms(t *testing.T) {
	tbl, err := Parse([]byte(`
globalWhiteRemoteAddresses: 127.0.0.{1,2}
accounts:
  - accessKey: "abcdefg"
    secretKey: 'secret-1'
    admin: "true"
    topicPerms: ["%RETRY%cg=SUB", " t1 = PUB "]
    defaultTopicPerm: SUB|PUB
  - &base
    accessKey: hijklmn
    secretKey: secret-2
    admin: yes
dataVersion:
  - counter: 3
    timestamp: 1700000000000
`))
	require.NoError(t, err)
	require.Len(t, tbl.GlobalWhite, 1)
	a := tbl.Account("abcdefg")
	require.True(t, a.Admin)
	require.Equal(t, PermPub|PermSub, a.DefaultTopicPerm)
	require.Equal(t, map[string]Perm{"t1": PermPub}, a.TopicPerms)
	require.Equal(t, map[string]Perm{"cg": PermSub}, a.GroupPerms, "a retry topic in topicPerms is the group's permission")
	require.True(t, tbl.Account("hijklmn").Admin)

	// Only white addresses, no accounts: a valid table.
	tbl, err = Parse([]byte("globalWhiteRemoteAddresses:\n  - 10.0.0.*\n"))
	require.NoError(t, err)
	require.Empty(t, tbl.Accounts())
}

// What RocketMQ refuses is refused, with the line and the key named.
func TestParseRefusals(t *testing.T) {
	acct := func(body string) string { return "accounts:\n  - accessKey: abcdefg\n    secretKey: 1234567\n" + body }
	for _, c := range []struct {
		name, yml string
		is        error
		msg       string
	}{
		{"short access key", "accounts:\n  - accessKey: abcdef\n    secretKey: 1234567\n", ErrInvalidAccount, "accessKey"},
		{"short secret key", "accounts:\n  - accessKey: abcdefg\n    secretKey: 123456\n", ErrInvalidAccount, "secretKey"},
		{"no secret key", "accounts:\n  - accessKey: abcdefg\n", ErrInvalidAccount, "secretKey"},
		{"no access key", "accounts:\n  - secretKey: 1234567\n", ErrInvalidAccount, "accessKey"},
		{"duplicate access key", acct("  - accessKey: abcdefg\n    secretKey: 7654321\n"), ErrInvalidAccount, "already defined at line 2"},
		{"bad perm", acct("    topicPerms: [t=RW]\n"), ErrInvalidAccount, "line 4"},
		{"ANY held", acct("    defaultTopicPerm: ANY\n"), ErrInvalidAccount, "defaultTopicPerm"},
		{"lower case perm", acct("    groupPerms: [g=sub]\n"), ErrInvalidAccount, "groupPerms"},
		{"no equals", acct("    topicPerms: [topicA]\n"), ErrInvalidAccount, "name=PERM"},
		{"empty name", acct("    topicPerms: [=SUB]\n"), ErrInvalidAccount, "name=PERM"},
		{"listed twice", acct("    topicPerms: [t=SUB, t=PUB]\n"), ErrInvalidAccount, "twice"},
		{"bad white address", acct("    whiteRemoteAddress: 256.1.1.1\n"), ErrInvalidAddress, "whiteRemoteAddress"},
		{"bad global address", "globalWhiteRemoteAddresses: [10.0.0.1-300]\n", ErrInvalidAddress, "line 1"},
		{"unknown key", "acounts: []\n", ErrInvalidFile, "unknown key \"acounts\""},
		{"unknown account key", acct("    topicPerm: [t=SUB]\n"), ErrInvalidFile, "unknown key \"topicPerm\""},
		{"bad admin", acct("    admin: maybe\n"), ErrInvalidAccount, "admin"},
		{"not a mapping", "- a\n- b\n", ErrInvalidFile, "mapping"},
		{"account not a mapping", "accounts: [x]\n", ErrInvalidFile, "accounts[0]"},
		{"not yaml", "accounts: [\n", ErrInvalidFile, ""},
		{"duplicate yaml key", "accounts: []\naccounts: []\n", ErrInvalidFile, "already defined"},
		{"empty", "", ErrEmptyFile, ""},
		{"only comments", "# nothing\n\n", ErrEmptyFile, ""},
		{"null document", "~\n", ErrEmptyFile, ""},
	} {
		_, err := Parse([]byte(c.yml))
		require.Error(t, err, c.name)
		require.True(t, errors.Is(err, c.is), "%s: %v", c.name, err)
		require.Contains(t, err.Error(), c.msg, c.name)
	}
	_, err := Parse([]byte(strings.Repeat("#", MaxFileSize+1)))
	require.ErrorIs(t, err, ErrInvalidFile)
	_, err = LoadFile(filepath.Join(t.TempDir(), "missing.yml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A YAML alias bomb (one long perms list repeated through an alias by thousands of accounts)
// is cut off by the entry bound instead of expanding without limit.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("accounts:\n  - accessKey: a0000000\n    secretKey: 1234567\n    topicPerms: &p [")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "t%d=SUB,", i)
	}
	b.WriteString("u=PUB]\n")
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&b, "  - {accessKey: a%07d, secretKey: 1234567, topicPerms: *p}\n", i)
	}
	require.Less(t, b.Len(), MaxFileSize)
	_, err := Parse([]byte(b.String()))
	require.ErrorIs(t, err, ErrInvalidFile)
	require.Contains(t, err.Error(), "entries")
}

func TestParseCredentials(t *testing.T) {
	c, err := ParseCredentials([]byte("# tools.yml\naccessKey: rocketmq2\nsecretKey: 12345678\nother: 1\n"))
	require.NoError(t, err)
	require.Equal(t, Credentials{AccessKey: "rocketmq2", SecretKey: "12345678"}, c)
	_, err = ParseCredentials([]byte("accessKey: rocketmq2\n"))
	require.ErrorIs(t, err, ErrInvalidAccount)
	_, err = ParseCredentials(nil)
	require.ErrorIs(t, err, ErrEmptyFile)
	_, err = ParseCredentials([]byte("[1]"))
	require.ErrorIs(t, err, ErrInvalidFile)
	p := filepath.Join(t.TempDir(), "tools.yml")
	require.NoError(t, os.WriteFile(p, []byte("accessKey: abc\nsecretKey: def\n"), 0o600))
	c, err = LoadCredentials(p)
	require.NoError(t, err)
	require.Equal(t, "abc", c.AccessKey)
}

func FuzzParse(f *testing.F) {
	sample, err := os.ReadFile("testdata/plain_acl.yml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)
	f.Add([]byte("accounts:\n  - accessKey: abcdefg\n    secretKey: 1234567\n    topicPerms: [a=PUB]\n"))
	f.Add([]byte("globalWhiteRemoteAddresses: [\"*\"]\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tbl, err := Parse(data) // never panics
		if err != nil {
			if !errors.Is(err, ErrInvalidFile) && !errors.Is(err, ErrInvalidAccount) &&
				!errors.Is(err, ErrInvalidAddress) && !errors.Is(err, ErrEmptyFile) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		for _, a := range tbl.Accounts() {
			if len(a.AccessKey) < MinAccessKeyLen || len(a.SecretKey) < MinSecretKeyLen {
				t.Fatalf("short key accepted: %+v", a)
			}
			if tbl.Account(a.AccessKey) != a {
				t.Fatalf("lookup of %q", a.AccessKey)
			}
		}
		_, _ = ParseCredentials(data)
	})
}
