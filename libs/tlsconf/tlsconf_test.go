package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/props"
	"github.com/stretchr/testify/require"
)

// Fixtures in testdata were made with OpenSSL 3: ca.pem signs server.pem (CN and SAN
// broker.example, not an address we dial); server.key is plain PKCS#8, server-enc.key the
// same key as PKCS#8 PBES2/AES-256-CBC, server-enc3des.key with 3DES, server-legacy.key with
// OpenSSL's legacy PEM encryption; the password is s3cret.
const fixturePassword = "s3cret"

func fixture(name string) string { return filepath.Join("testdata", name) }

func TestDefaultsAreRocketMQs(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, "permissive", c.TLSServerMode)
	require.Equal(t, "none", c.TLSServerNeedClientAuth)
	require.True(t, c.TLSTestModeEnable)
	require.False(t, c.TLSEnable)
	require.False(t, c.TLSServerAuthClient)
	require.False(t, c.TLSClientAuthServer)
	require.Equal(t, "/etc/rocketmq/tls.properties", c.TLSConfigFile)
	require.NoError(t, c.Validate())
	require.ElementsMatch(t, []string{
		"tls.server.mode", "tls.server.need.client.auth", "tls.server.certPath", "tls.server.keyPath",
		"tls.server.keyPassword", "tls.server.authClient", "tls.server.trustCertPath",
		"tls.client.certPath", "tls.client.keyPath", "tls.client.keyPassword", "tls.client.authServer",
		"tls.client.trustCertPath", "tls.test.mode.enable", "tls.enable", "tls.config.file",
	}, props.Keys(&c))
}

func TestValidateNamesKey(t *testing.T) {
	for key, mod := range map[string]func(*Config){
		"tls.server.mode":                            func(c *Config) { c.TLSServerMode = "strict" },
		"tls.server.need.client.auth":                func(c *Config) { c.TLSServerNeedClientAuth = "always" },
		"tls.server.certPath and tls.server.keyPath": func(c *Config) { c.TLSServerCertPath = "x" },
		"tls.client.certPath and tls.client.keyPath": func(c *Config) { c.TLSClientKeyPath = "x" },
	} {
		c := DefaultConfig()
		mod(&c)
		err := c.Validate()
		require.ErrorIs(t, err, ErrInvalidConfig)
		require.ErrorContains(t, err, key)
	}
}

func TestApplyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "tls.properties")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	c := DefaultConfig()
	c.TLSServerCertPath = "/from/main/config"
	c.TLSConfigFile = write("tls.test.mode.enable=false\ntls.server.certPath=/from/file\ntls.server.keyPath=/k\ntls.client.authServer=true\n")
	set, err := c.ApplyFile()
	require.NoError(t, err)
	require.Equal(t, []string{"tls.test.mode.enable", "tls.server.certPath", "tls.server.keyPath", "tls.client.authServer"}, set)
	require.False(t, c.TLSTestModeEnable)
	require.Equal(t, "/from/file", c.TLSServerCertPath, "the file overrides, as in RocketMQ")
	require.True(t, c.TLSClientAuthServer)

	for body, want := range map[string]string{
		"tls.server.mode=enforcing\n": "tls.server.mode cannot be set in tls.config.file",
		"tls.enable=true\n":           "tls.enable cannot be set in tls.config.file",
		"tls.server.certpath=/x\n":    "tls.server.certpath is not a TLS key",
		"tls.server.authClient=yes\n": `bad value "yes" for key "tls.server.authClient"`,
	} {
		c := DefaultConfig()
		c.TLSConfigFile = write(body)
		_, err := c.ApplyFile()
		require.ErrorIs(t, err, ErrInvalidConfig, body)
		require.ErrorContains(t, err, want)
		require.ErrorContains(t, err, "tls.properties:1")
	}

	c = DefaultConfig()
	c.TLSConfigFile = filepath.Join(dir, "absent.properties")
	set, err = c.ApplyFile()
	require.NoError(t, err, "a missing file is skipped, as in RocketMQ")
	require.Empty(t, set)
}

func TestServerModesAndCertificates(t *testing.T) {
	c := DefaultConfig()
	c.TLSServerMode = ModeDisabled
	s, err := c.ServerTLS()
	require.NoError(t, err)
	require.Nil(t, s)

	c = DefaultConfig() // permissive, test mode, no files: self-signed
	s, err = c.ServerTLS()
	require.NoError(t, err)
	require.True(t, s.SelfSigned)
	require.Len(t, s.Config.Certificates, 1)
	require.Equal(t, "rmqha test mode", s.Config.Certificates[0].Leaf.Subject.CommonName)

	c.TLSTestModeEnable = false
	_, err = c.ServerTLS()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.ErrorContains(t, err, "tls.server.certPath and tls.server.keyPath")

	for _, key := range []string{"server.key", "server-enc.key", "server-enc3des.key"} {
		c := DefaultConfig()
		c.TLSServerMode = ModeEnforcing
		c.TLSServerCertPath, c.TLSServerKeyPath = fixture("server.pem"), fixture(key)
		c.TLSServerKeyPassword = fixturePassword
		s, err := c.ServerTLS()
		require.NoError(t, err, key)
		require.False(t, s.SelfSigned, "configured files win over test mode")
	}
}

func TestEncryptedKeyErrorsNameTheKey(t *testing.T) {
	c := DefaultConfig()
	c.TLSServerCertPath, c.TLSServerKeyPath = fixture("server.pem"), fixture("server-enc.key")
	_, err := c.ServerTLS()
	require.ErrorContains(t, err, "tls.server.keyPath is encrypted: set tls.server.keyPassword")

	c.TLSServerKeyPassword = "wrong"
	_, err = c.ServerTLS()
	require.ErrorContains(t, err, "tls.server.keyPath: cannot decrypt with tls.server.keyPassword")

	c.TLSServerKeyPath, c.TLSServerKeyPassword = fixture("server-legacy.key"), fixturePassword
	_, err = c.ServerTLS()
	require.ErrorIs(t, err, ErrLegacyEncryption)
	require.ErrorContains(t, err, "tls.server.keyPath")
	require.ErrorContains(t, err, "openssl pkcs8 -topk8")

	c = DefaultConfig()
	c.TLSEnable = true
	c.TLSClientCertPath, c.TLSClientKeyPath = fixture("server.pem"), fixture("server-enc.key")
	_, err = c.ClientTLS()
	require.ErrorContains(t, err, "tls.client.keyPath is encrypted: set tls.client.keyPassword")

	c = DefaultConfig()
	c.TLSServerCertPath, c.TLSServerKeyPath = fixture("ca.pem"), fixture("server.key")
	_, err = c.ServerTLS()
	require.ErrorContains(t, err, "tls.server.certPath")
}

func TestNeedClientAuthMapping(t *testing.T) {
	for _, tc := range []struct {
		need string
		auth bool
		want tls.ClientAuthType
	}{
		{"none", false, tls.NoClientCert},
		{"none", true, tls.NoClientCert},
		{"optional", false, tls.RequestClientCert},
		{"optional", true, tls.VerifyClientCertIfGiven},
		{"require", false, tls.RequireAnyClientCert},
		{"require", true, tls.RequireAndVerifyClientCert},
	} {
		c := DefaultConfig()
		c.TLSServerNeedClientAuth, c.TLSServerAuthClient = tc.need, tc.auth
		c.TLSServerTrustCertPath = fixture("ca.pem")
		s, err := c.ServerTLS()
		require.NoError(t, err)
		require.Equal(t, tc.want, s.Config.ClientAuth, "%s authClient=%v", tc.need, tc.auth)
		require.Equal(t, tc.auth, s.Config.ClientCAs != nil)
		require.Equal(t, tls.NoClientCert, s.HTTP().ClientAuth)
	}
}

// handshake runs one TLS handshake over loopback and returns the client's error.
func handshake(t *testing.T, srv, cli *tls.Config) (clientErr, serverErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer nc.Close()
		tc := tls.Server(nc, srv)
		_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
		err = tc.Handshake()
		if err == nil { // TLS 1.3: a refused client certificate shows on the first read
			_, err = tc.Write([]byte{1})
		}
		done <- err
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	tc := tls.Client(nc, cli)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	clientErr = tc.Handshake()
	if clientErr == nil {
		var b [1]byte
		_, clientErr = tc.Read(b[:])
	}
	return clientErr, <-done
}

func TestClientVerifiesChainNotName(t *testing.T) {
	c := DefaultConfig()
	cli, err := c.ClientTLS()
	require.NoError(t, err)
	require.Nil(t, cli, "tls.enable=false")

	trusted := DefaultConfig()
	trusted.TLSServerCertPath, trusted.TLSServerKeyPath = fixture("server.pem"), fixture("server.key")
	trustedSrv, err := trusted.ServerTLS()
	require.NoError(t, err)
	selfSrv, err := DefaultConfig().ServerTLS()
	require.NoError(t, err)

	c.TLSEnable = true // authServer=false: anything goes, as in RocketMQ
	cli, err = c.ClientTLS()
	require.NoError(t, err)
	cerr, _ := handshake(t, selfSrv.Config, cli)
	require.NoError(t, cerr)

	c.TLSClientAuthServer, c.TLSClientTrustCertPath = true, fixture("ca.pem")
	cli, err = c.ClientTLS()
	require.NoError(t, err)
	cli.ServerName = "127.0.0.1" // the dialled address is not in the certificate: still fine
	cerr, _ = handshake(t, trustedSrv.Config, cli)
	require.NoError(t, cerr)
	cerr, _ = handshake(t, selfSrv.Config, cli)
	require.ErrorIs(t, cerr, ErrUntrusted)
}

// writeCert issues a client certificate from a fresh CA and writes CA, certificate and key.
func writeClientCert(t *testing.T, dir string) (caPath, certPath, keyPath string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "client CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	caPath, certPath, keyPath = filepath.Join(dir, "client-ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	require.NoError(t, os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	require.NoError(t, os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return caPath, certPath, keyPath
}

func TestMutualTLSFromKeys(t *testing.T) {
	caPath, certPath, keyPath := writeClientCert(t, t.TempDir())
	sc := DefaultConfig()
	sc.TLSServerMode = ModeEnforcing
	sc.TLSServerNeedClientAuth, sc.TLSServerAuthClient, sc.TLSServerTrustCertPath = "require", true, caPath
	srv, err := sc.ServerTLS()
	require.NoError(t, err)

	cc := DefaultConfig()
	cc.TLSEnable = true
	bare, err := cc.ClientTLS()
	require.NoError(t, err)
	cerr, serr := handshake(t, srv.Config, bare)
	require.Error(t, cerr)
	require.Error(t, serr)

	cc.TLSClientCertPath, cc.TLSClientKeyPath = certPath, keyPath
	withCert, err := cc.ClientTLS()
	require.NoError(t, err)
	cerr, serr = handshake(t, srv.Config, withCert)
	require.NoError(t, cerr)
	require.NoError(t, serr)

	// A certificate from a CA the server does not trust is refused.
	_, otherCert, otherKey := writeClientCert(t, t.TempDir())
	cc.TLSClientCertPath, cc.TLSClientKeyPath = otherCert, otherKey
	stranger, err := cc.ClientTLS()
	require.NoError(t, err)
	_, serr = handshake(t, srv.Config, stranger)
	require.Error(t, serr)
}

// FuzzDecryptKey: any key file bytes yield a key, an error, or pass through; never a panic.
func FuzzDecryptKey(f *testing.F) {
	for _, name := range []string{"server.key", "server-enc.key", "server-legacy.key", "ca.pem"} {
		b, err := os.ReadFile(fixture(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, fixturePassword)
	}
	f.Add([]byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n"), "x")
	f.Fuzz(func(t *testing.T, keyPEM []byte, password string) {
		_, _ = decryptKey("tls.server", keyPEM, password)
	})
}

func TestClientFlags(t *testing.T) {
	t.Setenv("RMQ_TLS_CLIENT_TRUST_CERT_PATH", "/ca.pem")
	c := DefaultConfig()
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	ClientFlags(fs, &c)
	require.NoError(t, fs.Parse([]string{"-tls.enable", "-tls.client.authServer=true"}))
	require.True(t, c.TLSEnable)
	require.True(t, c.TLSClientAuthServer)
	require.Equal(t, "/ca.pem", c.TLSClientTrustCertPath)
	require.Equal(t, map[string]string{"tls.enable": "true", "tls.client.authServer": "true"}, c.ClientSummary())
}
