package tlsconf

import "errors"

var (
	// ErrInvalidConfig is returned for a bad value, a missing or unreadable file, or a key that
	// does not fit its certificate; the message names the key.
	ErrInvalidConfig = errors.New("tlsconf: invalid TLS configuration")
	// ErrLegacyEncryption is returned (wrapped in ErrInvalidConfig) for a private key encrypted
	// with OpenSSL's legacy PEM encryption ("Proc-Type: 4,ENCRYPTED"), which is not supported.
	ErrLegacyEncryption = errors.New("key uses OpenSSL's legacy PEM encryption; only encrypted PKCS#8 is supported")
	// ErrUntrusted is returned by a client's handshake when tls.client.authServer is on and the
	// server's certificate chain does not verify.
	ErrUntrusted = errors.New("tlsconf: server certificate not trusted")
)
