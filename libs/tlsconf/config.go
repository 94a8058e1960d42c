package tlsconf

import (
	"errors"
	"fmt"
	"os"

	"github.com/rmqha/rmqha/libs/props"
)

// Server modes (tls.server.mode).
const (
	ModeDisabled   = "disabled"
	ModePermissive = "permissive"
	ModeEnforcing  = "enforcing"
)

// Client certificate policies (tls.server.need.client.auth).
const (
	ClientAuthNone     = "none"
	ClientAuthOptional = "optional"
	ClientAuthRequire  = "require"
)

// DefaultConfigFile is RocketMQ's tls.config.file default.
const DefaultConfigFile = "/etc/rocketmq/tls.properties"

// Config is RocketMQ's TLS settings; services embed it in their configuration, so the `prop`
// tags are keys of their properties files. See the package documentation for each key.
type Config struct {
	// TLSServerMode is disabled, permissive or enforcing. Default permissive.
	TLSServerMode string `prop:"tls.server.mode"`
	// TLSServerNeedClientAuth is none, optional or require. Default none.
	TLSServerNeedClientAuth string `prop:"tls.server.need.client.auth"`
	// TLSServerCertPath is the server's certificate chain (PEM file). Default "".
	TLSServerCertPath string `prop:"tls.server.certPath"`
	// TLSServerKeyPath is the server's private key (PEM file). Default "".
	TLSServerKeyPath string `prop:"tls.server.keyPath"`
	// TLSServerKeyPassword decrypts an encrypted server key. Default "".
	TLSServerKeyPassword string `prop:"tls.server.keyPassword"`
	// TLSServerAuthClient verifies client certificates against TLSServerTrustCertPath.
	// Default false.
	TLSServerAuthClient bool `prop:"tls.server.authClient"`
	// TLSServerTrustCertPath holds the CAs of client certificates (PEM); "" means the system
	// roots. Default "".
	TLSServerTrustCertPath string `prop:"tls.server.trustCertPath"`

	// TLSClientCertPath is the certificate chain a client presents (PEM). Default "".
	TLSClientCertPath string `prop:"tls.client.certPath"`
	// TLSClientKeyPath is its private key (PEM). Default "".
	TLSClientKeyPath string `prop:"tls.client.keyPath"`
	// TLSClientKeyPassword decrypts an encrypted client key. Default "".
	TLSClientKeyPassword string `prop:"tls.client.keyPassword"`
	// TLSClientAuthServer verifies the server's certificate chain (not its host name).
	// Default false.
	TLSClientAuthServer bool `prop:"tls.client.authServer"`
	// TLSClientTrustCertPath holds the CAs of server certificates (PEM); "" means the system
	// roots. Default "".
	TLSClientTrustCertPath string `prop:"tls.client.trustCertPath"`

	// TLSTestModeEnable lets a server without a configured certificate serve a self-signed
	// one generated at start. Default true.
	TLSTestModeEnable bool `prop:"tls.test.mode.enable"`
	// TLSEnable makes this process's remoting clients dial with TLS. Default false.
	TLSEnable bool `prop:"tls.enable"`
	// TLSConfigFile is a properties file with the keys above, read at start when it exists.
	// Default /etc/rocketmq/tls.properties.
	TLSConfigFile string `prop:"tls.config.file"`
}

// DefaultConfig returns RocketMQ 4.9's defaults.
func DefaultConfig() Config {
	return Config{
		TLSServerMode:           ModePermissive,
		TLSServerNeedClientAuth: ClientAuthNone,
		TLSTestModeEnable:       true,
		TLSConfigFile:           DefaultConfigFile,
	}
}

// Validate names the first offending key. It checks values, not files (ServerTLS and ClientTLS
// read those).
func (c Config) Validate() error {
	switch c.TLSServerMode {
	case ModeDisabled, ModePermissive, ModeEnforcing:
	default:
		return fmt.Errorf("%w: tls.server.mode: %q is not disabled, permissive or enforcing", ErrInvalidConfig, c.TLSServerMode)
	}
	switch c.TLSServerNeedClientAuth {
	case ClientAuthNone, ClientAuthOptional, ClientAuthRequire:
	default:
		return fmt.Errorf("%w: tls.server.need.client.auth: %q is not none, optional or require", ErrInvalidConfig, c.TLSServerNeedClientAuth)
	}
	if (c.TLSServerCertPath == "") != (c.TLSServerKeyPath == "") {
		return fmt.Errorf("%w: tls.server.certPath and tls.server.keyPath go together (one is empty)", ErrInvalidConfig)
	}
	if (c.TLSClientCertPath == "") != (c.TLSClientKeyPath == "") {
		return fmt.Errorf("%w: tls.client.certPath and tls.client.keyPath go together (one is empty)", ErrInvalidConfig)
	}
	return nil
}

// fileKeys are the keys a tls.config.file may set (RocketMQ's list: not the mode, not
// tls.enable).
var fileKeys = map[string]bool{
	"tls.test.mode.enable": true, "tls.server.need.client.auth": true,
	"tls.server.keyPath": true, "tls.server.keyPassword": true, "tls.server.certPath": true,
	"tls.server.authClient": true, "tls.server.trustCertPath": true,
	"tls.client.keyPath": true, "tls.client.keyPassword": true, "tls.client.certPath": true,
	"tls.client.authServer": true, "tls.client.trustCertPath": true,
}

// ApplyFile reads TLSConfigFile, when set and present, over c and returns the keys it set.
// A missing file is not an error (RocketMQ skips it too); an unreadable one, an unknown key,
// tls.server.mode or tls.enable in it, or a bad value is, naming the file line.
func (c *Config) ApplyFile() ([]string, error) {
	if c.TLSConfigFile == "" {
		return nil, nil
	}
	if _, err := os.Stat(c.TLSConfigFile); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	entries, err := props.ParseFile(c.TLSConfigFile)
	if err != nil {
		return nil, fmt.Errorf("%w: tls.config.file: %w", ErrInvalidConfig, err)
	}
	var set []string
	for _, e := range entries {
		if !fileKeys[e.Key] {
			why := "is not a TLS key"
			if e.Key == "tls.server.mode" || e.Key == "tls.enable" {
				why = "cannot be set in tls.config.file (RocketMQ ignores it there); set it in the service configuration"
			}
			return set, fmt.Errorf("%w: %s: %s %s", ErrInvalidConfig, e.Source, e.Key, why)
		}
		if err := props.Set(c, e.Key, e.Value, e.Source); err != nil {
			return set, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		set = append(set, e.Key)
	}
	return set, nil
}
