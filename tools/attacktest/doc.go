// Package attacktest plays attacks against the project's binaries, run as processes (name
// server, SYNC_MASTER master, slave from properties files, through tools/e2e), as a stranger on
// the same network would: raw frames on every port and unmodified rocketmq-client-go clients.
//
// Every case ends with the group's invariants: every process alive, every message a send was
// acknowledged for present and byte-exact on the master and on the slave (e2e.History.Check),
// a normal send answered SEND_OK, and each broker's resident memory within a stated budget
// (Fixture.CheckInvariants).
//
// HA link (the slave dials its master through a Front, a TCP forwarder the test can record
// through or switch to an impostor):
//
//   - FakeMaster: the slave's master address answers DIVERGED at 0 and OFFSET_TOO_OLD without
//     the secret (and with a wrong one) for 20 s: the slave's CommitLog and epoch file stay
//     byte-identical, it redials only at its backoff's pace, and it resumes from the real
//     master afterwards.
//   - FakeSlave: with the real slave down, peers without the secret or with a wrong one connect
//     to the master's HA port and acknowledge everything: SYNC_MASTER sends still answer
//     SLAVE_NOT_AVAILABLE, never SEND_OK.
//   - Replay: a genuine handshake recorded on the wire is replayed to the master (refused
//     NOT_AUTHORISED), and the master's recorded Hello and Accept are replayed to the slave
//     (refused: the proof does not cover the slave's fresh nonce).
//
// Name server (registration) attacks, by a client without the registration secret:
//
//   - REGISTER_BROKER as the group's master at its own address with a higher declared epoch
//     (and its own HA address, which would make a slave without haMasterAddress follow it);
//   - REGISTER_BROKER as brokerId 1 with the master's address (would remove the master);
//   - REGISTER_BROKER as the master, at its address, with an empty topic table (would empty
//     the route);
//   - REGISTER_BROKER with a 1 MiB cluster name;
//   - UNREGISTER_BROKER of the real master and slave;
//   - a REGISTER_BROKER recorded on the wire, played again later (and turned into an
//     UNREGISTER_BROKER).
//
// Broker requests and the store:
//
//   - TestStrangerAdminWrites: RocketMQ's admin writes (UPDATE_BROKER_CONFIG brokerPermission,
//     topic delete and re-permission, offset reset to 0 and clone, group disable and delete),
//     unsigned, with a guessed registration secret or under another access key, on master and
//     slave: all NO_PERMISSION and counted; route, topic and committed offset unchanged.
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
//   - TestStrangerTables/QueueLocks: 400 LOCK_BATCH_MQ naming new groups and 25,600 queues: the
//     lock table stops at lockMaxQueues (each group at lockMaxQueuesPerGroup), the rest are
//     answered SYSTEM_BUSY, an orderly consumer's renewals keep being served.
//   - TestStrangerTables/TopicAutoCreate: 1,000 sends to new topics: sends create topics until
//     the table holds autoCreateTopicLimit, the rest are answered TOPIC_NOT_EXIST.
//
// Transport (the master's remoting port, before any request is understood; transport_test.go):
//
//   - TestTransport/HeldFrames: 12 connections announce frames of almost 16 MiB, send all but
//     64 KiB and hold: read buffers stay within serverMaxBytesInFlight, the frame deadline
//     (serverFrameTimeoutMillis) closes every one, the memory is returned afterwards.
//   - TestTransport/OversizedLength: length prefixes above the largest frame and negative
//     ones close the connection at the prefix, nothing allocated.
//   - TestTransport/Slowloris: connections trickling one byte per 250 ms are closed at the
//     frame deadline.
//   - TestTransport/RequestFlood: one connection pipelines 30,000 sends and reads no answer:
//     bounded memory, everyone else served.
//   - TestTransport/UnreadAnswers: pipelined sends with a 64 KiB topic name, whose refusals
//     quote it, never read: answers stay small (remarks cut at 4 KiB), memory bounded.
//   - TestTransport/ConnectionFlood: 200 connections against serverMaxConnections=32: the rest are
//     closed at accept and counted, the connected producer is served during the flood and a
//     new one after it.
//   - TestTLSMismatch: TLS ClientHellos to a tls.server.mode=disabled master and plain
//     requests to an enforcing slave are refused and counted; both keep serving.
//
// Run with the binaries built (scripts/build.sh bin, then RMQHA_BIN_DIR=$PWD/bin), or let
// tools/e2e build them.
package attacktest
