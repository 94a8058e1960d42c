// Package attacktest plays attacks against the project's binaries, run as processes (name
// server, SYNC_MASTER master, slave from properties files, through tools/e2e), as a stranger on
// the same network would: raw remoting frames and unmodified rocketmq-client-go clients.
//
// Every case ends with Fixture.CheckInvariants: every process alive, every message a send was
// acknowledged for present and byte-exact on the master and on the slave (e2e.History.Check),
// a normal send answered SEND_OK, and each broker's resident memory within the fixture's
// budget.
//
// Cases:
//
//   - TestHeartbeatFlood: thousands of new consumer groups named over many heartbeats and
//     connections: the group table stops at autoCreateSubscriptionGroupLimit, heartbeats
//     beyond a bound are answered SUBSCRIPTION_GROUP_NOT_EXIST, sends keep being answered.
//   - TestSystemTopicSend: sends into SCHEDULE_TOPIC_XXXX and the other topics only brokers
//     write are answered NO_PERMISSION, nothing is stored, and the CommitLog does not grow (no
//     delay loop).
//   - TestQueueIDOutOfRange: queueId 4294967296 is answered SYSTEM_ERROR, not stored in queue 0.
//   - TestConsumeQueueFilesDamaged: consume-queue files deleted and truncated while the
//     brokers are stopped: after the restart every acknowledged message is delivered again to a
//     normal consumer, byte-exact, and the brokers report the rebuilt queues.
package attacktest
