package nameserver

import (
	"fmt"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
)

// Authenticator decides whether a signed REGISTER_BROKER or UNREGISTER_BROKER request comes
// from a broker of the group. It only verifies the credential (AccessKey and Signature,
// see libs/acl); the name server then checks the signed registrationTime and
// registrationDigest (acl.CheckRegistration) and the per-broker replay window, whatever the
// Authenticator.
//
// Two implementations fit:
//
//   - SecretAuthenticator (ACL off, the default): the access key is acl.BrokerAccessKey and
//     the signature verifies with the cluster registration secret.
//   - An ACL authenticator (aclEnable=true): the access key names an account of
//     plain_acl.yml; the signature verifies with its secretKey, the peer matches its
//     whiteRemoteAddress (or the global white list) and the account is an admin. It is
//     set as Config.Authenticator; brokers then sign with their own accessKey/secretKey
//     (acl.Signer) instead of the registration secret, adding the same registration
//     fields.
type Authenticator interface {
	// Authenticate returns nil when req's credential is a broker's, or an error wrapping
	// ErrUnauthenticated whose text (the NO_PERMISSION remark) says why not. peer is the
	// remote address.
	Authenticate(req *remoting.Command, peer string) error
}

// SecretAuthenticator verifies registrations signed with the cluster registration secret.
type SecretAuthenticator struct{ secret string }

// NewSecretAuthenticator returns the authenticator of secret (at least acl.MinSecretLen
// bytes).
func NewSecretAuthenticator(secret string) (*SecretAuthenticator, error) {
	if len(secret) < acl.MinSecretLen {
		return nil, fmt.Errorf("nameserver: registration secret of %d bytes, need at least %d", len(secret), acl.MinSecretLen)
	}
	return &SecretAuthenticator{secret: secret}, nil
}

// Authenticate implements Authenticator.
func (a *SecretAuthenticator) Authenticate(req *remoting.Command, _ string) error {
	if ak := req.Ext(acl.ExtAccessKey); ak != acl.BrokerAccessKey {
		return fmt.Errorf("%w: access key %s is not %q; brokers sign registrations with registrationSecret",
			ErrUnauthenticated, acl.QuoteKey(ak), acl.BrokerAccessKey)
	}
	if !acl.VerifySignature(req, a.secret) {
		return fmt.Errorf("%w: signature does not verify (different registrationSecret on broker and name server?)", ErrUnauthenticated)
	}
	return nil
}

// registrationAuth is the name server's own Authenticator: a registration signed under
// acl.BrokerAccessKey is checked against the registration secret; any other signed one was
// already verified as an admin account's by the ACL guard (aclEnable=true), and is refused
// when ACL is off.
type registrationAuth struct {
	secret     *SecretAuthenticator // nil without a registration secret
	aclChecked bool                 // the ACL guard admitted the request as an admin's
}

// Authenticate implements Authenticator.
func (a registrationAuth) Authenticate(req *remoting.Command, peer string) error {
	if req.Ext(acl.ExtAccessKey) == acl.BrokerAccessKey || !a.aclChecked {
		if a.secret == nil {
			return fmt.Errorf("%w: this name server has no registrationSecret; sign registrations with an admin account's accessKey/secretKey", ErrUnauthenticated)
		}
		return a.secret.Authenticate(req, peer)
	}
	return nil
}
