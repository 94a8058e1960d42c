package hawire_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/hawire/memlog"
)

// selfSigned makes a certificate for 127.0.0.1, valid for an hour, and a
// pool that trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rmqha HA test"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool
}

// TestReplicationOverTLS: with MasterConfig.TLS and SlaveConfig.TLS the HA
// link runs inside TLS (with client certificates here), the proofs inside
// it; a plain peer gets nowhere with a TLS master, and a TLS slave refuses a
// master whose certificate it does not trust.
func TestReplicationOverTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	ml, sl := memlog.New(64<<10), memlog.New(64<<10)
	mcfg := hawiretest.MasterConfig(t.TempDir())
	mcfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
	m := hawiretest.StartMaster(t, mcfg, ml)
	scfg := hawiretest.SlaveConfig(t.TempDir())
	scfg.TLS = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	s := hawiretest.StartSlave(t, scfg, sl, m.Addr().String())
	for i := 0; i < 200; i++ {
		if _, err := ml.Append(hawiretest.Record(700, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	hawiretest.WaitCaughtUp(t, ml, sl, 20*time.Second)
	hawiretest.RequireIdentical(t, ml, sl)
	hawiretest.Eventually(t, 5*time.Second, func() bool { return m.InSyncCount() == 2 }, "TLS slave in sync")

	// A plain-TCP slave cannot talk to the TLS master.
	plain := memlog.New(64 << 10)
	ps := hawiretest.StartSlave(t, hawiretest.SlaveConfig(t.TempDir()), plain, m.Addr().String())
	// A TLS slave that does not trust the master's certificate refuses it.
	_, otherPool := selfSigned(t)
	ucfg := hawiretest.SlaveConfig(t.TempDir())
	ucfg.BrokerID = 3
	ucfg.TLS = &tls.Config{RootCAs: otherPool, MinVersion: tls.VersionTLS13}
	untrusting := memlog.New(64 << 10)
	us := hawiretest.StartSlave(t, ucfg, untrusting, m.Addr().String())
	hawiretest.Eventually(t, 10*time.Second, func() bool {
		return ps.Status().Reconnects >= 2 && strings.Contains(us.Status().LastError, "certificate")
	}, "plain %+v, untrusting %+v", ps.Status(), us.Status())
	if plain.MaxOffset() != 0 || untrusting.MaxOffset() != 0 || len(m.Status().Slaves) != 1 {
		t.Fatalf("replicated without TLS: plain %d, untrusting %d, slaves %+v", plain.MaxOffset(), untrusting.MaxOffset(), m.Status().Slaves)
	}
	if st := s.Status(); !st.Connected {
		t.Fatalf("TLS slave %+v", st)
	}
}
