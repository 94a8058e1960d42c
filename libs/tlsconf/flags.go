package tlsconf

import (
	"flag"
	"os"
	"strconv"

	"github.com/rmqha/rmqha/libs/props"
)

// clientKeys are the keys a client-only tool takes as flags.
var clientKeys = []string{
	"tls.enable", "tls.client.authServer", "tls.client.trustCertPath", "tls.client.certPath",
	"tls.client.keyPath", "tls.client.keyPassword", "tls.config.file",
}

// ClientFlags registers the client keys on fs as flags named like the keys (-tls.enable,
// -tls.client.authServer, ...) bound to c; each flag's default is c's value or, when set, its
// RMQ_* environment variable (RMQ_TLS_ENABLE, ...). For tools without a properties file
// (mqadmin, bench). Call c.ApplyFile after parsing to honour tls.config.file.
func ClientFlags(fs *flag.FlagSet, c *Config) {
	for _, k := range clientKeys {
		if v, ok := os.LookupEnv(props.EnvName(k)); ok {
			_ = props.Set(c, k, v, "env "+props.EnvName(k))
		}
	}
	fs.BoolVar(&c.TLSEnable, "tls.enable", c.TLSEnable, "dial the name servers and brokers with TLS (env RMQ_TLS_ENABLE)")
	fs.BoolVar(&c.TLSClientAuthServer, "tls.client.authServer", c.TLSClientAuthServer, "verify the servers' certificate chains (env RMQ_TLS_CLIENT_AUTH_SERVER)")
	fs.StringVar(&c.TLSClientTrustCertPath, "tls.client.trustCertPath", c.TLSClientTrustCertPath, "CA certificates (PEM) for tls.client.authServer; empty: system roots")
	fs.StringVar(&c.TLSClientCertPath, "tls.client.certPath", c.TLSClientCertPath, "client certificate chain (PEM) for servers that ask for one")
	fs.StringVar(&c.TLSClientKeyPath, "tls.client.keyPath", c.TLSClientKeyPath, "its private key (PEM)")
	fs.StringVar(&c.TLSClientKeyPassword, "tls.client.keyPassword", c.TLSClientKeyPassword, "password of an encrypted PKCS#8 key")
	fs.StringVar(&c.TLSConfigFile, "tls.config.file", c.TLSConfigFile, "properties file with tls.* keys, read when present")
}

// ClientSummary describes the client side for a start-up line.
func (c Config) ClientSummary() map[string]string {
	return map[string]string{"tls.enable": strconv.FormatBool(c.TLSEnable), "tls.client.authServer": strconv.FormatBool(c.TLSClientAuthServer)}
}
