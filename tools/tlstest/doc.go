// Package tlstest runs the unmodified rocketmq-client-go with WithTls(true) against a group
// of real binaries (namesrv, master, slave) in tls.server.mode=permissive (RocketMQ's
// default: TLS and plain clients on one port) and enforcing (plain clients refused, brokers
// register with the name server over TLS).
//
// It is a package of its own because rocketmq-client-go turns TLS on for the whole process:
// WithTls writes into the client library's shared default remoting configuration, so every
// producer and consumer created after it dials TLS. No other test may share this binary.
package tlstest
