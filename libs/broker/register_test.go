package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// With a registration secret every REGISTER_BROKER and UNREGISTER_BROKER is signed under
// acl.BrokerAccessKey, carries a registrationTime and registrationDigest that match it, and
// the times increase strictly (the name server refuses a time it saw before).
func TestRegistrationsSignedAndFresh(t *testing.T) {
	ns := startNSStub(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "registration.secret")
	require.NoError(t, os.WriteFile(file, []byte(testRegistrationSecret+"\n"), 0o600))
	cfg := testConfig(t)
	cfg.NamesrvAddr = ns.addr()
	cfg.RegistrationSecret, cfg.RegistrationSecretFile = "", file
	b := startBroker(t, cfg)
	for i := 0; i < 3; i++ {
		b.RegisterNow()
	}
	require.NoError(t, b.Shutdown(context.Background()))

	ns.mu.Lock()
	reqs := append([]*remoting.Command(nil), ns.reqs...)
	ns.mu.Unlock()
	require.GreaterOrEqual(t, len(reqs), 4, "three registrations and the unregistration")
	require.Equal(t, remoting.UnregisterBroker, reqs[len(reqs)-1].Code)
	var last int64
	for i, req := range reqs {
		require.Equal(t, acl.BrokerAccessKey, req.Ext(acl.ExtAccessKey), i)
		require.True(t, acl.VerifySignature(req, testRegistrationSecret), "request %d not signed with the secret", i)
		require.False(t, acl.VerifySignature(req, testRegistrationSecret+"x"))
		ts, err := acl.CheckRegistration(req)
		require.NoError(t, err, i)
		require.Greater(t, ts, last, "registrationTime %d not after %d", i, last)
		require.InDelta(t, time.Now().UnixMilli(), ts, float64(time.Minute.Milliseconds()))
		last = ts
	}
}

// Without a secret registrations go unsigned (a name server must admit unauthenticated ones).
func TestRegistrationsUnsignedWithoutSecret(t *testing.T) {
	ns := startNSStub(t)
	cfg := testConfig(t)
	cfg.RegistrationSecret = ""
	cfg.NamesrvAddr = ns.addr()
	b := startBroker(t, cfg)
	b.RegisterNow()
	ns.mu.Lock()
	defer ns.mu.Unlock()
	require.NotEmpty(t, ns.reqs)
	require.Empty(t, ns.reqs[0].Ext(acl.ExtSignature))
	require.Empty(t, ns.reqs[0].Ext(acl.ExtAccessKey))
}

// Registration times increase within one millisecond and when the clock steps back.
func TestRegistrationTimeIncreases(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := &Broker{now: func() time.Time { return now }}
	a := b.nextRegistrationTime()
	require.Equal(t, a+1, b.nextRegistrationTime())
	now = now.Add(-time.Hour)
	require.Equal(t, a+2, b.nextRegistrationTime())
	now = now.Add(2 * time.Hour)
	require.Equal(t, now.UnixMilli(), b.nextRegistrationTime())
}

func TestRegistrationSecretKeys(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("tiny\n"), 0o600))
	good := filepath.Join(dir, "good")
	require.NoError(t, os.WriteFile(good, []byte(testRegistrationSecret), 0o600))
	for name, c := range map[string]struct{ secret, file, key string }{
		"both":        {testRegistrationSecret, good, "registrationSecretFile"},
		"unreadable":  {"", filepath.Join(dir, "missing"), "registrationSecretFile"},
		"short file":  {"", short, "registrationSecretFile"},
		"short value": {"0123456789abcde", "", "registrationSecret"},
	} {
		cfg := testConfig(t)
		cfg.RegistrationSecret, cfg.RegistrationSecretFile = c.secret, c.file
		err := cfg.Validate()
		require.True(t, errors.Is(err, ErrInvalidConfig) && strings.Contains(err.Error(), c.key), "%s: %v", name, err)
		_, err = New(cfg, testLogger())
		require.Error(t, err, name)
	}
	cfg := testConfig(t)
	cfg.RegistrationSecret, cfg.RegistrationSecretFile = "", good
	require.NoError(t, cfg.Validate())
	cfg.RegistrationSecretFile, cfg.RegistrationSecret = "", strconv.Quote(testRegistrationSecret)
	require.NoError(t, cfg.Validate())
}

// With both a registration secret and ACL credentials, registrations are signed with the
// secret (name servers with ACL off know only that) and everything else with the account.
func TestNameServerSignerChoosesPerCode(t *testing.T) {
	cfg := testConfig(t)
	cfg.RegistrationSecret = testRegistrationSecret
	cfg.AccessKey, cfg.SecretKey = "rmqha-admin", "admin-secret-key"
	b := &Broker{cfg: cfg, log: testLogger()}
	sign, err := b.nsSigner()
	require.NoError(t, err)
	reg := remoting.NewRequest(remoting.RegisterBroker, map[string]string{"brokerName": "b"}, nil)
	sign(reg)
	require.Equal(t, acl.BrokerAccessKey, reg.Ext(acl.ExtAccessKey))
	require.True(t, acl.VerifySignature(reg, testRegistrationSecret))
	other := remoting.NewRequest(remoting.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	sign(other)
	require.Equal(t, "rmqha-admin", other.Ext(acl.ExtAccessKey))
	require.True(t, acl.VerifySignature(other, "admin-secret-key"))

	cfg.RegistrationSecret = ""
	b = &Broker{cfg: cfg, log: testLogger()}
	sign, err = b.nsSigner()
	require.NoError(t, err)
	reg = remoting.NewRequest(remoting.RegisterBroker, map[string]string{"brokerName": "b"}, nil)
	sign(reg)
	require.Equal(t, "rmqha-admin", reg.Ext(acl.ExtAccessKey), "without a secret, registrations go under the account")
}
