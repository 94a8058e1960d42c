// Package meta holds the four metadata tables a broker keeps and persists:
// topics (TopicTable), subscription groups (SubscriptionGroupTable), consumer
// offsets (ConsumerOffsetTable) and delay-level offsets (DelayOffsetTable).
//
// # Versions
//
// Every table carries a DataVersion (route.DataVersion). Each mutation that
// changes the content sets its timestamp from the injected clock
// (Config.Now) and increments its counter; an operation that leaves the
// content as it was (re-putting an identical topic, committing the same
// offset) does not touch the version. Name servers, slaves and metasync
// compare versions to decide whether to refetch a table.
//
// # Files
//
// With Config.StorePathRootDir set, the tables live in RocketMQ's files
// under <StorePathRootDir>/config/: topics.json, subscriptionGroup.json,
// consumerOffset.json and delayOffset.json, in the JSON shapes Java brokers
// use (fastjson's bare integer map keys are accepted on load; this package
// writes standard JSON with quoted keys, which Java reads as well).
//
// Writes are atomic: the new content goes to <file>.tmp, is fsynced, the
// previous (valid) content is copied to <file>.bak the same way, then the
// temporary file is renamed over <file> and the directory is fsynced. A
// failure at any step leaves <file> as it was and is returned to the caller;
// the in-memory table keeps the change and the next successful persist
// writes it.
//
// Loading validates the file. A missing file starts an empty table (plus
// system topics); a file that cannot be read or parsed falls back to
// <file>.bak with a warning (and LoadInfo says so); when both are unusable
// the constructor fails with ErrCorrupt naming both files.
//
// Topic and subscription-group tables are rewritten whole, and a change
// says when it must be in the file (Durability):
//
//   - Wait (admin requests, topics auto-created by a send, dead-letter
//     topics, snapshots applied on a slave, retry topics created by a
//     send-back): the call returns once a rewrite holding the change
//     succeeded, and returns that rewrite's error. Rewrites are serialised;
//     one rewrite writes every change made before it started, so callers
//     queued behind it return without a write of their own (group commit).
//   - Batch (groups and retry topics auto-created by heartbeats and pulls):
//     the call returns at once. The table is rewritten PersistBatchInterval
//     after the first unwritten change, or by the call that brings the
//     unwritten changes to PersistBatchSize, whichever comes first: one
//     heartbeat naming thousands of new groups costs a few rewrites, not
//     two per group. A failed batch rewrite is logged and retried one
//     interval later. A crash loses the batch not yet written; the next
//     heartbeat creates those groups again.
//
// A message stored in a topic that exists only in memory would survive a
// crash that the topic does not, so the send paths call
// TopicTable.WaitDurable before answering: it returns at once for a topic
// already written, else after the rewrite it triggers or joins. Close
// writes what is pending. SubscriptionGroupTable.FindOrCreate refuses to
// auto-create beyond AutoCreateSubscriptionGroupLimit groups (ErrGroupLimit),
// TopicTable.CreateTopicInSendMessage to create a topic once the table holds
// AutoCreateTopicLimit topics (ErrTopicLimit).
//
// Offset tables change far more often and are persisted when the caller
// ticks Persist (Java does it every 5 s and on shutdown); Persist writes
// only if the table changed since the last write.
//
// All file access goes through FS (the repository's commitlog/vfs seam), so
// tests can inject write, sync and rename failures (vfs.NewErrorFS) and
// simulate power loss in the middle of a write (vfs.MemFS.CrashClone).
//
// # Slave side
//
// TopicTable.ApplySnapshot and SubscriptionGroupTable.ApplySnapshot replace
// the whole table with a master's snapshot (deletes propagate) and adopt its
// version. ConsumerOffsetTable.Merge takes the larger offset per queue and
// never lowers one; only ConsumerOffsetTable.Reset lowers offsets, on
// explicit request. DelayOffsetTable.ApplySnapshot replaces its table.
//
// All tables are safe for concurrent use.
package meta
