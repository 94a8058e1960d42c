package acl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

const testSecret = "0123456789abcdef-secret"

func registration() *remoting.Command {
	return remoting.NewRequest(remoting.RegisterBroker, map[string]string{
		"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster",
		"brokerId": "0", "haServerAddr": "127.0.0.1:10912", "epoch": "3",
	}, []byte(`{"topicConfigSerializeWrapper":{}}`))
}

func TestRegistrationRoundTrip(t *testing.T) {
	cmd := registration()
	PrepareRegistration(cmd, 1_700_000_000_123)
	SignCommand(cmd, BrokerAccessKey, testSecret)
	require.True(t, VerifySignature(cmd, testSecret))
	ts, err := CheckRegistration(cmd)
	require.NoError(t, err)
	require.Equal(t, int64(1_700_000_000_123), ts)
	require.Len(t, cmd.Ext(ExtRegistrationDigest), 64)
}

// Values re-split between neighbouring keys keep the RocketMQ signature valid (it signs the
// values without keys); the digest catches it. So does a signed REGISTER_BROKER replayed as
// UNREGISTER_BROKER (the code is not signed) and a field added after signing.
func TestRegistrationBindingCatchesResplitCodeAndAddedFields(t *testing.T) {
	cmd := registration()
	PrepareRegistration(cmd, 42)
	SignCommand(cmd, BrokerAccessKey, testSecret)

	resplit := *cmd
	resplit.ExtFields = clone(cmd.ExtFields)
	// brokerAddr ‖ brokerId: "127.0.0.1:10911" ‖ "0"  →  "127.0.0.1:1091" ‖ "10"
	resplit.ExtFields["brokerAddr"], resplit.ExtFields["brokerId"] = "127.0.0.1:1091", "10"
	require.True(t, VerifySignature(&resplit, testSecret), "the RocketMQ signature alone does not see it")
	_, err := CheckRegistration(&resplit)
	require.ErrorIs(t, err, ErrRegistrationUnbound)

	recoded := *cmd
	recoded.Code = remoting.UnregisterBroker
	require.True(t, VerifySignature(&recoded, testSecret))
	_, err = CheckRegistration(&recoded)
	require.ErrorIs(t, err, ErrRegistrationUnbound)

	added := *cmd
	added.ExtFields = clone(cmd.ExtFields)
	added.ExtFields["zz"] = ""
	require.True(t, VerifySignature(&added, testSecret), "an empty value adds nothing to the signed content")
	_, err = CheckRegistration(&added)
	require.ErrorIs(t, err, ErrRegistrationUnbound)

	body := *cmd
	body.ExtFields = clone(cmd.ExtFields)
	// registrationTime is the last key in byte order: its value is followed by the body.
	body.ExtFields[ExtRegistrationTime] += string(cmd.Body[:1])
	body.Body = cmd.Body[1:]
	require.True(t, VerifySignature(&body, testSecret), "a character moved from the body into the last value")
	_, err = CheckRegistration(&body)
	require.ErrorIs(t, err, ErrRegistrationUnbound)
}

func TestCheckRegistrationMissingOrBadTime(t *testing.T) {
	cmd := registration()
	_, err := CheckRegistration(cmd)
	require.ErrorIs(t, err, ErrRegistrationUnbound)
	for _, v := range []string{"x", "-5", "0", "99999999999999999999"} {
		cmd.ExtFields[ExtRegistrationTime] = v
		cmd.ExtFields[ExtRegistrationDigest] = RegistrationDigest(cmd.Code, cmd.ExtFields, len(cmd.Body))
		_, err = CheckRegistration(cmd)
		require.ErrorIs(t, err, ErrRegistrationUnbound, v)
	}
}

func TestLoadSecret(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	require.NoError(t, os.WriteFile(good, []byte("\n  "+testSecret+"  \n"), 0o600))
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("short\n"), 0o600))

	s, err := LoadSecret("", good, "k", "kFile")
	require.NoError(t, err)
	require.Equal(t, testSecret, s)
	s, err = LoadSecret(testSecret, "", "k", "kFile")
	require.NoError(t, err)
	require.Equal(t, testSecret, s)
	s, err = LoadSecret("", "", "k", "kFile")
	require.NoError(t, err)
	require.Empty(t, s)

	for name, c := range map[string]struct{ v, f, key string }{
		"both":        {testSecret, good, "k and kFile"},
		"unreadable":  {"", filepath.Join(dir, "missing"), "kFile"},
		"short file":  {"", short, "kFile"},
		"short value": {"0123456789abcde", "", "k"},
	} {
		_, err := LoadSecret(c.v, c.f, "k", "kFile")
		require.ErrorIs(t, err, ErrSecret, name)
		require.True(t, strings.Contains(err.Error(), c.key), "%s: %v", name, err)
	}
}

func FuzzCheckRegistration(f *testing.F) {
	f.Add("brokerAddr", "127.0.0.1:1", "1700000000000", "", []byte("{}"), int32(remoting.RegisterBroker))
	f.Add(ExtRegistrationTime, "5", "5", strings.Repeat("0", 64), []byte{}, int32(remoting.UnregisterBroker))
	f.Fuzz(func(t *testing.T, k, v, ts, digest string, body []byte, code int32) {
		cmd := remoting.NewRequest(code, map[string]string{k: v, ExtRegistrationTime: ts, ExtRegistrationDigest: digest}, body)
		_, _ = CheckRegistration(cmd) // never panics
		PrepareRegistration(cmd, 7)
		got, err := CheckRegistration(cmd)
		if err != nil || got != 7 {
			t.Fatalf("own registration refused: %v %d %v", err, got, cmd.ExtFields)
		}
		if k != ExtRegistrationTime && k != ExtRegistrationDigest && k != ExtAccessKey && k != ExtSignature && k != extUniqueKeyQuery {
			cmd.ExtFields[k] = v + "x"
			if _, err := CheckRegistration(cmd); !errors.Is(err, ErrRegistrationUnbound) {
				t.Fatalf("changed value accepted: %v", cmd.ExtFields)
			}
		}
	})
}
