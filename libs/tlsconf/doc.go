// Package tlsconf holds RocketMQ's TLS settings, under RocketMQ's key names and with RocketMQ
// 4.9's defaults, and turns them into a *tls.Config for a remoting server and one for a
// remoting client.
//
// # Keys
//
//	key                           default                        side
//	tls.server.mode               permissive                     server: disabled | permissive | enforcing
//	tls.server.need.client.auth   none                           server: none | optional | require
//	tls.server.certPath           ""                             server: certificate chain, PEM
//	tls.server.keyPath            ""                             server: private key, PEM (PKCS#8, PKCS#1, SEC 1)
//	tls.server.keyPassword        ""                             server: password of an encrypted PKCS#8 key
//	tls.server.authClient         false                          server: verify client certificates
//	tls.server.trustCertPath      ""                             server: CAs for client certificates (PEM); "" = system roots
//	tls.client.certPath           ""                             client: certificate chain for client auth
//	tls.client.keyPath            ""                             client: its private key
//	tls.client.keyPassword        ""                             client: password of an encrypted key
//	tls.client.authServer         false                          client: verify the server's certificate
//	tls.client.trustCertPath      ""                             client: CAs for server certificates; "" = system roots
//	tls.test.mode.enable          true                           both: see below
//	tls.enable                    false                          client: dial with TLS
//	tls.config.file               /etc/rocketmq/tls.properties   both: a properties file with the keys above
//
// Environment variables follow libs/props: dots become underscores (RMQ_TLS_SERVER_MODE,
// RMQ_TLS_SERVER_CERT_PATH, RMQ_TLS_ENABLE, ...).
//
// # Semantics (RocketMQ's, with the differences marked)
//
//   - tls.server.mode: see libs/remoting (tls.go): permissive serves plain and TLS clients on
//     one port, enforcing refuses plain ones, disabled refuses TLS ones.
//   - tls.server.need.client.auth with tls.server.authClient:
//     none: no client certificate asked; optional: asked, a given one must verify when
//     authClient=true (else it is accepted unverified); require: one must be given, and verify
//     when authClient=true. Differs: RocketMQ falls back to none on an unknown value; here it
//     is refused at start.
//   - tls.client.authServer=false (the default, as in RocketMQ) accepts any server
//     certificate. true verifies its chain against tls.client.trustCertPath (or the system
//     roots) but, as RocketMQ's Netty client, not the host name: brokers are dialled by the
//     IP addresses the name servers hand out.
//   - tls.test.mode.enable (default true, as in RocketMQ): a server with no certificate
//     configured serves a self-signed one generated at start. Differs: RocketMQ's test mode
//     ignores configured files and authServer; here configured files and verification
//     settings are always used, test mode only fills the missing server certificate.
//     tls.test.mode.enable=false with no certificate refuses to start (unless the mode is
//     disabled).
//   - tls.config.file: read at start when it exists; its keys override the other sources
//     (as in RocketMQ, whose file overrides the system properties). tls.server.mode and
//     tls.enable cannot be set there (RocketMQ ignores them there; here that is refused
//     rather than silently ignored), nor can unknown keys.
//   - Encrypted private keys: PKCS#8 "ENCRYPTED PRIVATE KEY" PEM blocks (what Netty accepts
//     with a keyPassword; PBES2 with PBKDF2 or scrypt, AES or 3DES) are decrypted with the
//     key's password. OpenSSL's legacy "Proc-Type: 4,ENCRYPTED" PEM encryption is refused
//     with a message naming the key (convert with `openssl pkcs8 -topk8 -v2 aes-256-cbc`).
//
// TLS 1.2 is the lowest version offered.
package tlsconf
