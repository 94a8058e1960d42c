// Package acl is RocketMQ 4.x plain access control for the group's remoting ports: who a
// request comes from (an access key whose signature verifies) and what it may do. Brokers and
// name servers install a Guard on their remoting server when aclEnable=true; the group's own
// clients sign with Signer.
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
//
// # The file
//
// plain_acl.yml in RocketMQ's layout (Parse documents every key and what is refused):
//
//	globalWhiteRemoteAddresses: [10.10.103.*, 192.168.0.*]
//	accounts:
//	  - accessKey: RocketMQ
//	    secretKey: 12345678
//	    whiteRemoteAddress:
//	    admin: false
//	    defaultTopicPerm: DENY
//	    defaultGroupPerm: SUB
//	    topicPerms: [topicA=DENY, topicB=PUB|SUB, topicC=SUB]
//	    groupPerms: [groupA=DENY, groupB=PUB|SUB, groupC=SUB]
//
// Address patterns: AddressPattern. One file per server; RocketMQ 4.9's extra conf/acl/*.yml
// directory is not read.
//
// # Decisions
//
// Table.Decide is the pure core: (table, remote address, request) → Decision (allowed or
// refused, with a Reason and the detail of the remark). Its order is RocketMQ's
// PlainPermissionManager.validate: global white address (everything skipped), access key known,
// the account's white address (signature and permissions skipped), signature, admin codes
// (NeedsAdmin), then the resources of the request (Needs.Read, PlainAccessValidator.parse's
// mapping) against the listed permissions and the defaults. Refusals are answered
// NO_PERMISSION (16) with RocketMQ's wording and what was missing, e.g.
//
//	No accessKey is configured
//	No acl config for <accessKey>
//	Check signature failed for accessKey=<accessKey>
//	Need admin permission for request code=17 (UPDATE_AND_CREATE_TOPIC), but accessKey=<ak> is not
//	No default permission for topic:T (SEND_MESSAGE needs PUB, accessKey=<ak> holds DENY)
//
// Permissions: DENY refuses; PUB allows sends; SUB allows pulls, offset queries and commits,
// heartbeats, consumer lists and send-backs; a group is checked as its retry topic %RETRY%group
// (so a consumer needs SUB on its group, and sending into a retry topic is the group's SUB).
//
// # Reloading
//
// A Guard re-reads its file every ReloadInterval (1 s) and applies a new version once two reads
// in a row see the same bytes. A version that does not load (unreadable, deleted, empty,
// invalid) is logged once and counted (acl_reloads_total{result="error"},
// acl_last_reload_ok 0); the last good table keeps serving, and acl_last_reload_ok is 1 again
// once the file loads or is written back to the table in use. Write the file by renaming a
// complete copy into place.
//
// # Cost
//
// A signed SEND_MESSAGE is decided without allocating: the HMAC state and scratch buffers are
// pooled per account, the needs of fixed-field codes live on the stack, and remarks are built
// only for refusals.
package acl
