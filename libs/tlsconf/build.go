package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"time"

	"github.com/youmark/pkcs8"
)

// Server is a built server-side TLS configuration.
type Server struct {
	// Config is for the remoting port: certificate and client-certificate policy.
	Config *tls.Config
	// SelfSigned reports that the certificate was generated at start (test mode).
	SelfSigned bool
}

// HTTP returns a configuration for a status HTTP port: the same certificate, no client
// certificate asked (health checkers and scrapers have none).
func (s *Server) HTTP() *tls.Config {
	h := s.Config.Clone()
	h.ClientAuth = tls.NoClientCert
	h.ClientCAs = nil
	h.NextProtos = []string{"http/1.1"}
	return h
}

// ServerTLS builds the remoting server's TLS configuration; nil (no error) when
// tls.server.mode=disabled.
func (c Config) ServerTLS() (*Server, error) {
	if c.TLSServerMode == ModeDisabled {
		return nil, nil
	}
	return c.BuildServer()
}

// BuildServer builds the server-side configuration whatever the mode (the status HTTP port
// may use TLS on a server whose remoting port does not).
func (c Config) BuildServer() (*Server, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	out := &Server{}
	var cert tls.Certificate
	var err error
	switch {
	case c.TLSServerCertPath != "":
		cert, err = loadKeyPair("tls.server", c.TLSServerCertPath, c.TLSServerKeyPath, c.TLSServerKeyPassword)
		if err != nil {
			return nil, err
		}
	case c.TLSTestModeEnable:
		if cert, err = selfSigned(time.Now()); err != nil {
			return nil, fmt.Errorf("tlsconf: generate a test-mode certificate: %w", err)
		}
		out.SelfSigned = true
	default:
		return nil, fmt.Errorf("%w: tls.server.mode=%s needs tls.server.certPath and tls.server.keyPath (or tls.test.mode.enable=true for a self-signed certificate)",
			ErrInvalidConfig, c.TLSServerMode)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.TLSServerAuthClient && c.TLSServerTrustCertPath != "" {
		if cfg.ClientCAs, err = loadPool("tls.server.trustCertPath", c.TLSServerTrustCertPath); err != nil {
			return nil, err
		}
	}
	switch c.TLSServerNeedClientAuth {
	case ClientAuthOptional:
		cfg.ClientAuth = tls.RequestClientCert
		if c.TLSServerAuthClient {
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	case ClientAuthRequire:
		cfg.ClientAuth = tls.RequireAnyClientCert
		if c.TLSServerAuthClient {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	out.Config = cfg
	return out, nil
}

// ClientTLS builds the remoting clients' TLS configuration; nil (no error) unless tls.enable.
func (c Config) ClientTLS() (*tls.Config, error) {
	if !c.TLSEnable {
		return nil, nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSClientCertPath != "" {
		cert, err := loadKeyPair("tls.client", c.TLSClientCertPath, c.TLSClientKeyPath, c.TLSClientKeyPassword)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	// Chain verification happens in VerifyConnection; the standard one would also demand the
	// dialled IP in the certificate, which RocketMQ's clients do not.
	cfg.InsecureSkipVerify = true
	if c.TLSClientAuthServer {
		var roots *x509.CertPool
		if c.TLSClientTrustCertPath != "" {
			var err error
			if roots, err = loadPool("tls.client.trustCertPath", c.TLSClientTrustCertPath); err != nil {
				return nil, err
			}
		}
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, roots) }
	}
	return cfg, nil
}

// verifyChain checks the peer's chain against roots (nil: the system's), not its names.
func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("%w: server sent no certificate", ErrUntrusted)
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	return nil
}

// loadKeyPair reads a PEM certificate chain and its key; prefix names the keys in errors.
func loadKeyPair(prefix, certPath, keyPath, password string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s.certPath: %w", ErrInvalidConfig, prefix, err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s.keyPath: %w", ErrInvalidConfig, prefix, err)
	}
	keyPEM, err = decryptKey(prefix, keyPEM, password)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%w: %s.certPath %s with %s.keyPath %s: %w", ErrInvalidConfig, prefix, certPath, prefix, keyPath, err)
	}
	return cert, nil
}

// decryptKey returns keyPEM with an encrypted PKCS#8 key replaced by its plain form; other keys
// pass through unchanged.
func decryptKey(prefix string, keyPEM []byte, password string) ([]byte, error) {
	rest := keyPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return keyPEM, nil // tls.X509KeyPair reports a file without a key
		}
		switch {
		case b.Headers["Proc-Type"] == "4,ENCRYPTED":
			return nil, fmt.Errorf("%w: %s.keyPath: %w (convert it: openssl pkcs8 -topk8 -v2 aes-256-cbc -in old.key -out new.key)",
				ErrInvalidConfig, prefix, ErrLegacyEncryption)
		case b.Type == "ENCRYPTED PRIVATE KEY":
			if password == "" {
				return nil, fmt.Errorf("%w: %s.keyPath is encrypted: set %s.keyPassword", ErrInvalidConfig, prefix, prefix)
			}
			key, err := pkcs8.ParsePKCS8PrivateKey(b.Bytes, []byte(password))
			if err != nil {
				return nil, fmt.Errorf("%w: %s.keyPath: cannot decrypt with %s.keyPassword: %w", ErrInvalidConfig, prefix, prefix, err)
			}
			der, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				return nil, fmt.Errorf("%w: %s.keyPath: %w", ErrInvalidConfig, prefix, err)
			}
			return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
		case b.Type == "PRIVATE KEY" || b.Type == "RSA PRIVATE KEY" || b.Type == "EC PRIVATE KEY":
			return keyPEM, nil
		}
	}
}

func loadPool(key, path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%w: %s: no PEM certificate in %s", ErrInvalidConfig, key, path)
	}
	return pool, nil
}

// selfSigned makes test mode's certificate: ECDSA P-256, valid for a year, for localhost and
// the loopback addresses.
func selfSigned(now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "rmqha test mode", Organization: []string{"rmqha"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if host != "" && host != "localhost" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
