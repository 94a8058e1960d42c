package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqha/rmqha/libs/remoting"
)

// Broker registration (REGISTER_BROKER, UNREGISTER_BROKER) is signed like any request (see
// the package doc) and carries two more signed ext fields that the RocketMQ signature alone
// cannot provide:
//
//	registrationTime    decimal milliseconds since the Unix epoch on the broker's clock,
//	                    strictly increasing per broker process; the name server refuses a
//	                    time outside its clock-skew window and, per broker (cluster, broker
//	                    name, broker address), a time not after the last one it accepted
//	                    (a recorded request cannot be replayed).
//	registrationDigest  lowercase hex SHA-256 of the binding content below.
//
// The RocketMQ signature covers the ext values concatenated without their keys or any
// separator, so characters can move between neighbouring values ("127.0.0.1:10911" + "0"
// reads the same as "127.0.0.1:1091" + "10") and the request code is not signed at all. The
// digest binds every value to its key and the request code:
//
//	binding = "rmqha-registration-v1" ‖ uvarint(code)
//	          ‖ for each ext key k in byte order, except AccessKey, Signature,
//	            registrationDigest and _UNIQUE_KEY_QUERY:
//	                uvarint(len k) ‖ k ‖ uvarint(len v) ‖ v
//	          ‖ uvarint(len body)
//
// The digest is itself a signed value: a request whose values were re-split no longer
// matches its digest, and a new digest cannot be signed without the key. The fields are set
// before signing (PrepareRegistration, then SignCommand or a remoting.ClientConfig.Signer);
// a signer must add no field other than AccessKey and Signature.
//
// With the cluster registration secret (ACL off) brokers sign under the access key
// BrokerAccessKey; with ACL on they sign with their own account, which must be an admin.
const (
	// BrokerAccessKey is the access key of registrations signed with the cluster
	// registration secret.
	BrokerAccessKey = "rmqha-broker"
	// ExtRegistrationTime is the signed timestamp field of a registration.
	ExtRegistrationTime = "registrationTime"
	// ExtRegistrationDigest is the field binding a registration's values to their keys.
	ExtRegistrationDigest = "registrationDigest"
	// MinSecretLen is the shortest registration secret accepted, in bytes.
	MinSecretLen = 16
)

const bindingVersion = "rmqha-registration-v1"

// AppendBinding appends the binding content (see above) of a request to dst.
func AppendBinding(dst []byte, code int32, ext map[string]string, bodyLen int) []byte {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		switch k {
		case ExtAccessKey, ExtSignature, ExtRegistrationDigest, extUniqueKeyQuery:
		default:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	dst = append(dst, bindingVersion...)
	dst = binary.AppendUvarint(dst, uint64(uint32(code)))
	for _, k := range keys {
		v := ext[k]
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	return binary.AppendUvarint(dst, uint64(bodyLen))
}

// RegistrationDigest is the registrationDigest value for a request.
func RegistrationDigest(code int32, ext map[string]string, bodyLen int) string {
	sum := sha256.Sum256(AppendBinding(nil, code, ext, bodyLen))
	return hex.EncodeToString(sum[:])
}

// PrepareRegistration sets registrationTime (ms, the caller keeps it increasing) and
// registrationDigest on cmd, which must then be signed.
func PrepareRegistration(cmd *remoting.Command, timeMs int64) {
	if cmd.ExtFields == nil {
		cmd.ExtFields = make(map[string]string, 2)
	}
	cmd.ExtFields[ExtRegistrationTime] = strconv.FormatInt(timeMs, 10)
	cmd.ExtFields[ExtRegistrationDigest] = RegistrationDigest(cmd.Code, cmd.ExtFields, len(cmd.Body))
}

// CheckRegistration verifies a registration's digest and returns its registrationTime in
// ms. It does not verify the signature (the caller's authenticator does) nor judge the time.
func CheckRegistration(cmd *remoting.Command) (int64, error) {
	ts := cmd.ExtFields[ExtRegistrationTime]
	if ts == "" {
		return 0, fmt.Errorf("%w: no %s field", ErrRegistrationUnbound, ExtRegistrationTime)
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || ms <= 0 {
		return 0, fmt.Errorf("%w: %s is not a positive decimal", ErrRegistrationUnbound, ExtRegistrationTime)
	}
	got := cmd.ExtFields[ExtRegistrationDigest]
	want := RegistrationDigest(cmd.Code, cmd.ExtFields, len(cmd.Body))
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return 0, fmt.Errorf("%w: %s does not match the request", ErrRegistrationUnbound, ExtRegistrationDigest)
	}
	return ms, nil
}

// LoadSecret resolves a secret given either inline (value, configuration key valueKey) or
// as a file (path file, key fileKey) whose content is trimmed of surrounding white space.
// Neither set returns "", nil; both set, an unreadable file, or a secret shorter than
// MinSecretLen bytes is an error naming the key.
func LoadSecret(value, file, valueKey, fileKey string) (string, error) {
	switch {
	case value != "" && file != "":
		return "", fmt.Errorf("%w: %s and %s are both set; set one", ErrSecret, valueKey, fileKey)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w", ErrSecret, fileKey, err)
		}
		s := strings.TrimSpace(string(b))
		if len(s) < MinSecretLen {
			return "", fmt.Errorf("%w: %s: %s holds %d bytes, need at least %d", ErrSecret, fileKey, file, len(s), MinSecretLen)
		}
		return s, nil
	case value != "":
		if len(value) < MinSecretLen {
			return "", fmt.Errorf("%w: %s: %d bytes, need at least %d", ErrSecret, valueKey, len(value), MinSecretLen)
		}
		return value, nil
	}
	return "", nil
}
