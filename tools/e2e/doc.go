// Package e2e runs the project's binaries as processes (name server, SYNC_MASTER master,
// slave) and drives them with the unmodified rocketmq-client-go/v2 producer and push consumer.
//
// StartGroup is the fixture: it writes RocketMQ-keyed properties files, starts every process on
// free loopback ports with its own data folder, and waits until the name server routes TBW102
// to the master and the slave, and the master reports the slave streaming and in sync.
//
// History records every send a test made with its answer, and Check verifies afterwards,
// broker by broker, that each message the brokers reported as stored is present and intact at
// the CommitLog offset its message id names, at the queue offset its answer named, that no
// offset was handed to two messages, and that the queues hold no entries beyond the stored
// messages and the sends whose outcome is unknown (nothing stored twice).
//
// Delivery guarantees the tests hold the group to:
//
//   - a push consumer in clustering mode gets every stored message; without faults exactly once;
//   - after a clean master restart a group resumes from the offsets it committed; messages
//     consumed after the last commit (the client commits every 5 s and on shutdown) may come
//     again, which is the client's at-least-once window. The tests shut the consumer down
//     (which commits) before the restart, so they expect no repeat at all;
//   - with the master killed, a consumer keeps reading replicated messages from the slave once
//     its route no longer names the master (the client refreshes routes every 30 s).
package e2e
