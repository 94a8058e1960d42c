// Package acltest runs the group's binaries with RocketMQ plain ACL on (aclEnable=true on the
// name server, the master and the slave, one plain_acl.yml) and drives them with the
// unmodified rocketmq-client-go producer and push consumer using WithCredentials, plus the
// group's own tools (mqadmin, metasync, bench) with the admin account.
//
// What the tests hold the group to:
//
//   - right credentials: sends are SEND_OK and a push consumer receives every message once;
//   - wrong secret, unknown access key, no credentials: refused with NO_PERMISSION at the name
//     server (the client reports no route) and at the broker; nothing stored;
//   - a DENY topic, a SUB-only account sending, a PUB-only account consuming: NO_PERMISSION
//     from the broker (the client's error carries CODE: 16); nothing stored, no group or offset
//     created for the refused consumer;
//   - the group's own parts keep working with the admin account: registration of master and
//     slave, the slave's metadata pulls, metasync's pulls, mqadmin;
//   - a change of plain_acl.yml takes effect without a restart; a version that does not load
//     leaves the last good table serving.
//
// TestACLSendCost (RMQHA_ACL_BENCH=1) measures send throughput and p50 with ACL on and off in
// the same run; it reports numbers and asserts none.
package acltest
