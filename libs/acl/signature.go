package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"hash"
	"sync"

	"github.com/rmqha/rmqha/libs/remoting"
)

// Ext field names of a signed request (RocketMQ's SessionCredentials names).
const (
	ExtAccessKey     = "AccessKey"
	ExtSignature     = "Signature"
	ExtSecurityToken = "SecurityToken"
	// extUniqueKeyQuery is the flag QUERY_MESSAGE adds after signing; it is not signed.
	extUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
)

// maxSortedKeys keeps the key sort on the stack for every header RocketMQ clients send.
const maxSortedKeys = 32

// signatureLen is the length of a base64 HMAC-SHA1 (20 bytes).
const signatureLen = 28

// AppendContent appends the signed content of a request (see the package doc) to dst. With
// withToken false a SecurityToken field is left out, as rocketmq-client-go signs.
func AppendContent(dst []byte, ext map[string]string, body []byte, withToken bool) []byte {
	return append(appendExtContent(dst, ext, withToken), body...)
}

// appendExtContent appends the ext-field part of the signed content (values in key order).
func appendExtContent(dst []byte, ext map[string]string, withToken bool) []byte {
	var buf [maxSortedKeys]kv
	for _, f := range sortedFields(buf[:0], ext, withToken) {
		dst = append(dst, f.v...)
	}
	return dst
}

// sortedFields collects the signed fields of ext (key and value, once) into dst and sorts
// them by key; dst on the caller's stack keeps it allocation-free for ordinary headers.
func sortedFields(dst []kv, ext map[string]string, withToken bool) []kv {
	for k, v := range ext {
		switch {
		case k == ExtSignature, k == extUniqueKeyQuery:
		case k == ExtSecurityToken && !withToken:
		default:
			dst = append(dst, kv{k, v})
		}
	}
	// Insertion sort: headers have a dozen or two fields; no interface, no allocation.
	for i := 1; i < len(dst); i++ {
		for j := i; j > 0 && dst[j].k < dst[j-1].k; j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

type kv struct{ k, v string }

// Sign returns base64(HMAC-SHA1(secretKey, content)).
func Sign(secretKey string, content []byte) string {
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write(content)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SignCommand sets AccessKey and Signature on cmd (whose ExtFields it may modify: sign a copy,
// as remoting.ClientConfig.Signer does).
func SignCommand(cmd *remoting.Command, accessKey, secretKey string) {
	if cmd.ExtFields == nil {
		cmd.ExtFields = make(map[string]string, 2)
	}
	delete(cmd.ExtFields, ExtSignature)
	cmd.ExtFields[ExtAccessKey] = accessKey
	cmd.ExtFields[ExtSignature] = Sign(secretKey, AppendContent(nil, cmd.ExtFields, cmd.Body, true))
}

// Signer returns a remoting.ClientConfig.Signer that signs every request with the key pair.
// It keeps pooled HMAC states, so signing costs one string (the signature) per request.
func Signer(accessKey, secretKey string) func(*remoting.Command) {
	pool := newVerifierPool(secretKey)
	return func(cmd *remoting.Command) {
		if cmd.ExtFields == nil {
			cmd.ExtFields = make(map[string]string, 2)
		}
		delete(cmd.ExtFields, ExtSignature)
		cmd.ExtFields[ExtAccessKey] = accessKey
		v := pool.pool.Get().(*verifier)
		cmd.ExtFields[ExtSignature] = v.sign(cmd)
		pool.pool.Put(v)
	}
}

// CredentialsSigner is Signer for c, or nil when c is empty (requests go unsigned).
func CredentialsSigner(c Credentials) func(*remoting.Command) {
	if c.Empty() {
		return nil
	}
	return Signer(c.AccessKey, c.SecretKey)
}

// VerifySignature reports whether cmd's Signature is the signature of its content under
// secretKey, in either content form (with or without SecurityToken). The comparison is in
// constant time.
func VerifySignature(cmd *remoting.Command, secretKey string) bool {
	v := newVerifier(secretKey)
	return v.verify(cmd)
}

// verifier checks signatures under one secret key. It keeps its HMAC state and scratch
// buffers, so a verification allocates nothing; pooled per account (Account.verify).
type verifier struct {
	mac     hash.Hash
	content []byte
	sum     [sha1.Size]byte
	enc     [signatureLen]byte
	got     [signatureLen]byte
	// order is the sorted field names of the last content built (for orderToken): a client
	// sends the same header fields request after request, so the next content is built by
	// looking its values up in that order instead of sorting again.
	order      []string
	orderToken bool
}

// appendContent is appendExtContent with the field order of the previous request reused when
// the request has exactly those fields (same count, every one present), which makes the
// content identical to the sorted build.
func (v *verifier) appendContent(dst []byte, ext map[string]string, withToken bool) []byte {
	n := len(ext)
	if _, ok := ext[ExtSignature]; ok {
		n--
	}
	if _, ok := ext[extUniqueKeyQuery]; ok {
		n--
	}
	if _, ok := ext[ExtSecurityToken]; ok && !withToken {
		n--
	}
	if n == len(v.order) && n > 0 && withToken == v.orderToken {
		start := len(dst)
		hit := true
		for _, k := range v.order {
			val, ok := ext[k]
			if !ok {
				hit = false
				break
			}
			dst = append(dst, val...)
		}
		if hit {
			return dst
		}
		dst = dst[:start]
	}
	var buf [maxSortedKeys]kv
	fields := sortedFields(buf[:0], ext, withToken)
	v.order, v.orderToken = v.order[:0], withToken
	if len(fields) <= maxSortedKeys {
		for _, f := range fields {
			v.order = append(v.order, f.k)
		}
	}
	for _, f := range fields {
		dst = append(dst, f.v...)
	}
	return dst
}

func newVerifier(secretKey string) *verifier {
	return &verifier{mac: hmac.New(sha1.New, []byte(secretKey)), content: make([]byte, 0, 512)}
}

func (v *verifier) verify(cmd *remoting.Command) bool {
	sig := cmd.ExtFields[ExtSignature]
	if len(sig) != signatureLen {
		return false
	}
	got := append(v.got[:0], sig...)
	if v.check(cmd, true, got) {
		return true
	}
	_, hasToken := cmd.ExtFields[ExtSecurityToken]
	return hasToken && v.check(cmd, false, got)
}

// sign returns the signature of cmd's content (SecurityToken included, as Java signs).
func (v *verifier) sign(cmd *remoting.Command) string {
	v.digest(cmd, true)
	return string(v.enc[:])
}

// digest computes base64(HMAC) of cmd's content into v.enc.
func (v *verifier) digest(cmd *remoting.Command, withToken bool) {
	v.content = v.appendContent(v.content[:0], cmd.ExtFields, withToken)
	if cap(v.content) > 64<<10 {
		defer func() { v.content = make([]byte, 0, 512) }() // do not pool a huge header's buffer
	}
	v.mac.Reset()
	v.mac.Write(v.content)
	v.mac.Write(cmd.Body)
	sum := v.mac.Sum(v.sum[:0])
	base64.StdEncoding.Encode(v.enc[:], sum)
}

func (v *verifier) check(cmd *remoting.Command, withToken bool, got []byte) bool {
	v.digest(cmd, withToken)
	return subtle.ConstantTimeCompare(v.enc[:], got) == 1
}

// verifierPool is a pool of verifiers under one secret key.
type verifierPool struct {
	pool sync.Pool
}

func newVerifierPool(secretKey string) *verifierPool {
	p := &verifierPool{}
	p.pool.New = func() any { return newVerifier(secretKey) }
	return p
}

func (p *verifierPool) verify(cmd *remoting.Command) bool {
	v := p.pool.Get().(*verifier)
	ok := v.verify(cmd)
	p.pool.Put(v)
	return ok
}
