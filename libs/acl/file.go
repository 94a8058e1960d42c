package acl

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits of one plain_acl.yml, so a hostile or broken file costs bounded memory.
const (
	// MaxFileSize is the largest plain_acl.yml read, in bytes.
	MaxFileSize = 4 << 20
	// maxEntries bounds the scalars a file may expand to (YAML aliases included).
	maxEntries = 1 << 20
	// maxAliasDepth bounds alias chains.
	maxAliasDepth = 8
)

// Minimum key lengths: RocketMQ refuses keys of 6 characters or fewer
// (AclConstants.ACCESS_KEY_MIN_LENGTH / SECRET_KEY_MIN_LENGTH are 6, compared with <=).
const (
	MinAccessKeyLen = 7
	MinSecretKeyLen = 7
)

// RetryGroupTopicPrefix starts the retry topic of a consumer group ("%RETRY%" + group); such a
// topic is checked as the group.
const RetryGroupTopicPrefix = "%RETRY%"

// Top-level and account keys of plain_acl.yml (RocketMQ's AclConstants names).
const (
	keyGlobalWhite  = "globalWhiteRemoteAddresses"
	keyAccounts     = "accounts"
	keyDataVersion  = "dataVersion"
	keyAccessKey    = "accessKey"
	keySecretKey    = "secretKey"
	keyWhiteAddr    = "whiteRemoteAddress"
	keyAdmin        = "admin"
	keyDefaultTopic = "defaultTopicPerm"
	keyDefaultGroup = "defaultGroupPerm"
	keyTopicPerms   = "topicPerms"
	keyGroupPerms   = "groupPerms"
)

// LoadFile reads and parses a plain_acl.yml (at most MaxFileSize bytes).
func LoadFile(path string) (*Table, error) {
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalidFile, path, MaxFileSize)
	}
	return data, nil
}

// Parse builds a Table from the bytes of a plain_acl.yml in RocketMQ 4.x's layout:
//
//	globalWhiteRemoteAddresses:      # optional: addresses that skip every check
//	  - 10.10.103.*
//	accounts:
//	  - accessKey: RocketMQ          # required, more than 6 characters, unique
//	    secretKey: 12345678          # required, more than 6 characters
//	    whiteRemoteAddress:          # optional: this account's requests from here skip checks
//	    admin: false                 # admin accounts may send the admin request codes
//	    defaultTopicPerm: DENY       # for topics not listed (missing = DENY, as RocketMQ)
//	    defaultGroupPerm: SUB        # for groups not listed (missing = DENY)
//	    topicPerms: [topicA=DENY, topicB=PUB|SUB]
//	    groupPerms: [groupA=DENY, groupB=SUB]
//	dataVersion: [...]               # written by RocketMQ's admin API; ignored
//
// Scalars are taken as written (secretKey: 12345678 is the string "12345678"). Refused, with
// the line and key named: unknown keys, keys of 6 characters or fewer, a missing secret key, a
// permission other than DENY, PUB, SUB, PUB|SUB, SUB|PUB, a resource listed twice, an access key
// given twice, an address pattern RocketMQ would refuse, and a file with no document at all
// (ErrEmptyFile).
func Parse(data []byte) (*Table, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalidFile, MaxFileSize)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidFile, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, ErrEmptyFile
	}
	p := &parser{}
	root, err := p.deref(doc.Content[0])
	if err != nil {
		return nil, err
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, ErrEmptyFile
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.fileErr(root, "the document must be a mapping (globalWhiteRemoteAddresses, accounts)")
	}
	t := &Table{accounts: map[string]*Account{}, Digest: sha256.Sum256(data)}
	lines := map[string]int{}
	err = p.mapping(root, func(key string, kn, v *yaml.Node) error {
		switch key {
		case keyGlobalWhite:
			items, err := p.scalars(v, key)
			if err != nil {
				return err
			}
			for _, it := range items {
				ap, err := ParseAddressPattern(it.Value)
				if err != nil {
					return fmt.Errorf("line %d: %s: %w", it.Line, key, err)
				}
				if !ap.IsEmpty() {
					t.GlobalWhite = append(t.GlobalWhite, ap)
				}
			}
		case keyAccounts:
			seq, err := p.sequence(v, key)
			if err != nil {
				return err
			}
			for i, an := range seq {
				a, err := p.account(an, i)
				if err != nil {
					return err
				}
				if prev, dup := lines[a.AccessKey]; dup {
					return fmt.Errorf("%w: line %d: accounts[%d].accessKey %q is already defined at line %d",
						ErrInvalidAccount, an.Line, i, a.AccessKey, prev)
				}
				lines[a.AccessKey] = an.Line
				t.accounts[a.AccessKey] = a
				t.order = append(t.order, a.AccessKey)
			}
		case keyDataVersion:
			// RocketMQ's admin API records a version here; it does not affect access.
		default:
			return p.fileErr(kn, fmt.Sprintf("unknown key %q (want %s, %s or %s)", key, keyGlobalWhite, keyAccounts, keyDataVersion))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// parser walks the YAML node tree, counting scalars against maxEntries.
type parser struct {
	entries int
}

func (p *parser) fileErr(n *yaml.Node, msg string) error {
	return fmt.Errorf("%w: line %d: %s", ErrInvalidFile, n.Line, msg)
}

// deref follows aliases (bounded).
func (p *parser) deref(n *yaml.Node) (*yaml.Node, error) {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i >= maxAliasDepth || n.Alias == nil {
			return nil, p.fileErr(n, "alias chain too long")
		}
		n = n.Alias
	}
	if n == nil {
		return nil, fmt.Errorf("%w: missing node", ErrInvalidFile)
	}
	p.entries++
	if p.entries > maxEntries {
		return nil, p.fileErr(n, fmt.Sprintf("more than %d entries", maxEntries))
	}
	return n, nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// mapping calls fn for every key of a mapping node, in order; a key given twice is refused.
func (p *parser) mapping(n *yaml.Node, fn func(key string, kn, v *yaml.Node) error) error {
	seen := make(map[string]int, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, err := p.deref(n.Content[i])
		if err != nil {
			return err
		}
		if kn.Kind != yaml.ScalarNode {
			return p.fileErr(kn, "a key must be a plain scalar")
		}
		if line, dup := seen[kn.Value]; dup {
			return p.fileErr(kn, fmt.Sprintf("key %q already defined at line %d", kn.Value, line))
		}
		seen[kn.Value] = kn.Line
		v, err := p.deref(n.Content[i+1])
		if err != nil {
			return err
		}
		if err := fn(kn.Value, kn, v); err != nil {
			return err
		}
	}
	return nil
}

// sequence returns the items of a sequence node (a null value is an empty sequence).
func (p *parser) sequence(n *yaml.Node, key string) ([]*yaml.Node, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.fileErr(n, key+" must be a list")
	}
	out := make([]*yaml.Node, 0, len(n.Content))
	for _, c := range n.Content {
		c, err := p.deref(c)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// scalars returns the items of a list of scalars; a single scalar counts as a one-item list.
func (p *parser) scalars(n *yaml.Node, key string) ([]*yaml.Node, error) {
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		return []*yaml.Node{n}, nil
	}
	items, err := p.sequence(n, key)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		if it.Kind != yaml.ScalarNode {
			return nil, p.fileErr(it, key+" items must be plain values")
		}
	}
	return items, nil
}

// scalar returns a scalar's text ("" for null).
func (p *parser) scalar(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.fileErr(n, key+" must be a plain value")
	}
	if isNull(n) {
		return "", nil
	}
	return n.Value, nil
}

func (p *parser) account(n *yaml.Node, idx int) (*Account, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.fileErr(n, fmt.Sprintf("accounts[%d] must be a mapping", idx))
	}
	a := &Account{DefaultTopicPerm: PermDeny, DefaultGroupPerm: PermDeny}
	where := func(kn *yaml.Node, key string) string {
		return fmt.Sprintf("line %d: accounts[%d].%s", kn.Line, idx, key)
	}
	var topicItems, groupItems []*yaml.Node
	err := p.mapping(n, func(key string, kn, v *yaml.Node) error {
		var err error
		switch key {
		case keyAccessKey:
			a.AccessKey, err = p.scalar(v, key)
		case keySecretKey:
			a.SecretKey, err = p.scalar(v, key)
		case keyWhiteAddr:
			var s string
			if s, err = p.scalar(v, key); err == nil {
				if a.WhiteRemoteAddress, err = ParseAddressPattern(s); err != nil {
					err = fmt.Errorf("%s: %w", where(kn, key), err)
				}
			}
		case keyAdmin:
			var s string
			if s, err = p.scalar(v, key); err == nil {
				var ok bool
				if a.Admin, ok = parseYAMLBool(s); !ok {
					err = fmt.Errorf("%w: %s: %q is not true or false", ErrInvalidAccount, where(kn, key), s)
				}
			}
		case keyDefaultTopic, keyDefaultGroup:
			var s string
			if s, err = p.scalar(v, key); err == nil && s != "" {
				perm, ok := ParsePerm(s)
				if !ok {
					return fmt.Errorf("%w: %s: %q is not DENY, PUB, SUB or PUB|SUB", ErrInvalidAccount, where(kn, key), s)
				}
				if key == keyDefaultTopic {
					a.DefaultTopicPerm = perm
				} else {
					a.DefaultGroupPerm = perm
				}
			}
		case keyTopicPerms:
			topicItems, err = p.scalars(v, key)
		case keyGroupPerms:
			groupItems, err = p.scalars(v, key)
		default:
			return p.fileErr(kn, fmt.Sprintf("accounts[%d]: unknown key %q", idx, key))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(a.AccessKey) < MinAccessKeyLen {
		return nil, fmt.Errorf("%w: line %d: accounts[%d].accessKey %q: missing or shorter than %d characters",
			ErrInvalidAccount, n.Line, idx, a.AccessKey, MinAccessKeyLen)
	}
	if len(a.SecretKey) < MinSecretKeyLen {
		return nil, fmt.Errorf("%w: line %d: accounts[%d].secretKey (accessKey %q): missing or shorter than %d characters",
			ErrInvalidAccount, n.Line, idx, a.AccessKey, MinSecretKeyLen)
	}
	if err := a.addPerms(topicItems, false, idx); err != nil {
		return nil, err
	}
	if err := a.addPerms(groupItems, true, idx); err != nil {
		return nil, err
	}
	a.init()
	return a, nil
}

// addPerms adds "name=PERM" items. A topic item naming a retry topic ("%RETRY%g") is the
// group g's permission, as RocketMQ keys both by the retry topic.
func (a *Account) addPerms(items []*yaml.Node, group bool, idx int) error {
	key := keyTopicPerms
	if group {
		key = keyGroupPerms
	}
	for _, it := range items {
		name, ps, ok := strings.Cut(it.Value, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("%w: line %d: accounts[%d].%s: %q is not name=PERM", ErrInvalidAccount, it.Line, idx, key, it.Value)
		}
		perm, ok := ParsePerm(ps)
		if !ok {
			return fmt.Errorf("%w: line %d: accounts[%d].%s: %q: the permission is not DENY, PUB, SUB or PUB|SUB", ErrInvalidAccount, it.Line, idx, key, it.Value)
		}
		isGroup := group
		if !group && strings.HasPrefix(name, RetryGroupTopicPrefix) {
			name, isGroup = name[len(RetryGroupTopicPrefix):], true
		}
		m := &a.TopicPerms
		if isGroup {
			m = &a.GroupPerms
		}
		if *m == nil {
			*m = map[string]Perm{}
		}
		if _, dup := (*m)[name]; dup {
			return fmt.Errorf("%w: line %d: accounts[%d].%s: %q is listed twice", ErrInvalidAccount, it.Line, idx, key, name)
		}
		(*m)[name] = perm
	}
	return nil
}

// parseYAMLBool reads true/false as YAML 1.1 (SnakeYAML, RocketMQ's parser) writes them.
func parseYAMLBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "false", "no", "off", "n":
		return false, true
	case "true", "yes", "on", "y":
		return true, true
	}
	b, err := strconv.ParseBool(s)
	return b, err == nil
}

// Credentials is a client's key pair (conf/tools.yml of RocketMQ's tools, or configuration).
type Credentials struct {
	AccessKey string
	SecretKey string
}

// Empty reports whether no access key is set.
func (c Credentials) Empty() bool { return c.AccessKey == "" }

// ParseCredentials reads a RocketMQ tools.yml (accessKey and secretKey at the top level; other
// keys are ignored, as RocketMQ's tools ignore them). Both keys must be set.
func ParseCredentials(data []byte) (Credentials, error) {
	if len(data) > MaxFileSize {
		return Credentials{}, fmt.Errorf("%w: larger than %d bytes", ErrInvalidFile, MaxFileSize)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Credentials{}, fmt.Errorf("%w: %v", ErrInvalidFile, err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 || len(bytes.TrimSpace(data)) == 0 {
		return Credentials{}, ErrEmptyFile
	}
	p := &parser{}
	root, err := p.deref(doc.Content[0])
	if err != nil {
		return Credentials{}, err
	}
	if root.Kind != yaml.MappingNode {
		return Credentials{}, p.fileErr(root, "the document must be a mapping with accessKey and secretKey")
	}
	var c Credentials
	err = p.mapping(root, func(key string, _, v *yaml.Node) error {
		var err error
		switch key {
		case keyAccessKey:
			c.AccessKey, err = p.scalar(v, key)
		case keySecretKey:
			c.SecretKey, err = p.scalar(v, key)
		}
		return err
	})
	if err != nil {
		return Credentials{}, err
	}
	if c.AccessKey == "" || c.SecretKey == "" {
		return Credentials{}, fmt.Errorf("%w: accessKey and secretKey must both be set", ErrInvalidAccount)
	}
	return c, nil
}

// LoadCredentials reads a tools.yml (ParseCredentials).
func LoadCredentials(path string) (Credentials, error) {
	data, err := readBounded(path)
	if err != nil {
		return Credentials{}, err
	}
	c, err := ParseCredentials(data)
	if err != nil {
		return Credentials{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
