// Package acl is RocketMQ 4.x plain access control for the group's remoting ports: who a
// request comes from (an access key whose signature verifies) and what it may do.
//
// # Signatures
//
// A signed request carries two ext fields, AccessKey and Signature (and, optionally,
// SecurityToken). The signature is
//
//	base64( HMAC-SHA1( secretKey, content ) )
//	content = value(k1) ‖ value(k2) ‖ … ‖ value(kn) ‖ body
//
// where k1 < k2 < … < kn are the request's ext field names in byte order, AccessKey included,
// Signature and _UNIQUE_KEY_QUERY excluded; values are concatenated without separators. Java's
// client includes SecurityToken in the content when it sends one; rocketmq-client-go sends it
// but leaves it out of the content. Verify accepts either form, nothing else. The scheme has
// no nonce or timestamp (RocketMQ's format): a recorded request can be replayed as it is, so
// the ports that must not accept replays (registration) add their own freshness checks, and TLS
// keeps recordings from being made.
package acl
