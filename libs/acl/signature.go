package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"slices"

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

// AppendContent appends the signed content of a request (see the package doc) to dst. With
// withToken false a SecurityToken field is left out, as rocketmq-client-go signs.
func AppendContent(dst []byte, ext map[string]string, body []byte, withToken bool) []byte {
	var buf [maxSortedKeys]string
	keys := buf[:0]
	for k := range ext {
		switch {
		case k == ExtSignature, k == extUniqueKeyQuery:
		case k == ExtSecurityToken && !withToken:
		default:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		dst = append(dst, ext[k]...)
	}
	return append(dst, body...)
}

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
func Signer(accessKey, secretKey string) func(*remoting.Command) {
	return func(cmd *remoting.Command) { SignCommand(cmd, accessKey, secretKey) }
}

// VerifySignature reports whether cmd's Signature is the signature of its content under
// secretKey, in either content form (with or without SecurityToken). The comparison is in
// constant time.
func VerifySignature(cmd *remoting.Command, secretKey string) bool {
	got, err := base64.StdEncoding.DecodeString(cmd.ExtFields[ExtSignature])
	if err != nil || len(got) != sha1.Size {
		return false
	}
	check := func(withToken bool) bool {
		mac := hmac.New(sha1.New, []byte(secretKey))
		mac.Write(AppendContent(nil, cmd.ExtFields, cmd.Body, withToken))
		return hmac.Equal(mac.Sum(nil), got)
	}
	if check(true) {
		return true
	}
	_, hasToken := cmd.ExtFields[ExtSecurityToken]
	return hasToken && check(false)
}
