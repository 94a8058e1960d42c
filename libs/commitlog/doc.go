// Package commitlog is the message store of a broker: a RocketMQ-format
// CommitLog (every message of every topic, in arrival order) and the
// ConsumeQueues that index it per topic and queue. The master and the slave
// both keep their messages here; a slave fills its CommitLog with bytes
// copied from the master (AppendRaw) and builds its own consume queues.
//
// # Folder layout
//
//	<Dir>/                          storePathRootDir
//	├── commitlog/
//	│   ├── 00000000000000000000    segment files, named by their first
//	│   ├── 00000000001073741824    physical offset (20 digits); each exactly
//	│   └── 00000000002147483648    SegmentSize bytes once full
//	├── consumequeue/
//	│   └── <topic>/<queueId>/
//	│       ├── 00000000000000000000  CQUnitsPerFile units each, named by
//	│       └── 00000000000006000000  their first byte (logical offset × 20)
//	├── index/
//	│   └── 00000000000000000000    message index files (KEYS, UNIQ_KEY),
//	│                               named by the CommitLog offset they index
//	│                               from; layout in indexfile.go
//	├── checkpoint                  two 64-byte slots, see below
//	├── cqmanifest                  what each consume queue held (coverage.go)
//	├── abort                       exists while the store is open: its
//	│                               presence at Open means a crash
//	└── intent                      exists only during Truncate / Reset
//
// # CommitLog record (RocketMQ V1 layout, big-endian)
//
// Records are stored exactly as a pull response and the HA stream carry
// them. Offsets are for IPv4 hosts; an IPv6 born/store host (SYSFLAG 0x10 /
// 0x20) takes 20 bytes instead of 8.
//
//	 0      4      8       12      16     20            28              36
//	+------+------+-------+-------+------+-------------+---------------+
//	|TOTAL |MAGIC |BODYCRC|QUEUEID|FLAG  | QUEUEOFFSET | PHYSICALOFFSET|
//	|SIZE  |V1    |       |       |      | (logical)   | (this record) |
//	+------+------+-------+-------+------+-------------+---------------+
//	 36      40             48             56             64
//	+-------+--------------+--------------+--------------+--------------+
//	|SYSFLAG|BORNTIMESTAMP | BORNHOST     |STORETIMESTAMP| STOREHOST    |
//	|       | ms           | ip4 + port32 | ms           | ip4 + port32 |
//	+-------+--------------+--------------+--------------+--------------+
//	 72       76                84        88
//	+--------+-----------------+---------+------+--------+------+-------+-------+
//	|RECONSUME| PREPARED TX    | BODYLEN | BODY |TOPICLEN| TOPIC|PROPLEN| PROPS |
//	|TIMES    | OFFSET         | int32   |      | 1 byte |      | int16 |       |
//	+--------+-----------------+---------+------+--------+------+-------+-------+
//	TOTALSIZE = 91 + bodyLen + topicLen + propLen   (IPv4 hosts)
//	MAGIC V1 = 0xDAA320A7; BODYCRC = CRC-32/IEEE(body) & 0x7FFFFFFF
//
// A record never spans two segments: when a record (plus 8 bytes) does not
// fit in the rest of a segment, the rest is filled with a BLANK record and
// the record goes to the next segment:
//
//	+-----------+-------------+----------------------------+
//	| TOTALSIZE | 0xCBD43194  | zeros up to the segment end|
//	| = rest    | BLANK magic |                            |
//	+-----------+-------------+----------------------------+
//
// Validation (recovery, reads, raw appends) checks magic, size bounds, that
// the field lengths add up to TOTALSIZE, PHYSICALOFFSET, BODYCRC, the topic
// characters and that a non-empty properties string ends with 0x02 and has
// no NUL. RocketMQ's layout has no checksum over the other header fields, so
// a bit flip there (say in BORNTIMESTAMP) cannot be detected; the
// consume-queue path also checks topic, queue id and queue offset against
// the unit that points at the record.
//
// # ConsumeQueue unit (20 bytes, big-endian)
//
//	 0                8         12                20
//	+-----------------+---------+-----------------+
//	| CommitLog offset| size    | tags code       |
//	| int64           | int32   | int64           |
//	+-----------------+---------+-----------------+
//	logical offset = position in the queue; tags code = Java
//	String.hashCode(TAGS) sign-extended (0 without tags), or Config.TagsCode.
//
// Units are written by one dispatcher that follows the CommitLog from the
// dispatched offset, the same way behind Append and AppendRaw. A replica that
// takes bytes with AppendRawVerified hands them to DispatchRaw afterwards, and
// the dispatcher, when idle and caught up, builds their units from those bytes
// instead of reading them back from the file. A queue whose
// first record arrives at queue offset N (a replica that started at the
// master's last segment) starts at N; units before N read as zero (blank).
// Transactional prepared and rollback records get no unit and queue offset 0.
//
// # Checkpoint file
//
// Two slots written alternately (seq decides which is newer), so a torn
// write never loses both:
//
//	slot (64 bytes)
//	 0      4        8      16        24           32         40        48     52
//	+------+--------+------+---------+------------+----------+---------+------+----+
//	|"RMCP"|version | seq  | flushed | dispatched | minOffset| written | crc32| pad|
//	|      | = 1    |      | CL off. | CL off.    |          | at (ms) | 0..48|    |
//	+------+--------+------+---------+------------+----------+---------+------+----+
//	flushed: every CommitLog byte below is fsynced.
//	dispatched (<= flushed): every record below has its unit fsynced.
//
// The intent file (17 bytes: "RMIN", kind 1=truncate 2=reset, offset,
// crc32) is written to a temporary name, fsynced and renamed before a
// Truncate or Reset touches any file, and removed after the last fsync; Open
// replays an intent it finds, so a crash in the middle never leaves a stale
// tail readable.
//
// # Recovery
//
// Clean shutdown (no abort file, valid checkpoint that matches the files):
// the checkpoint's flushed offset is the end of the log; only the newest
// RecoveryCheckSegments segments are validated record by record. Crash: every
// record is validated from the start of the segment holding the checkpoint's
// flushed offset (RecoveryFullScan: from the first segment); the log is cut
// at the first invalid byte (RecoveryReport says where and why), consume
// queues are cut back to the checkpoint's dispatched offset and rebuilt by
// dispatching again.
//
// The log is read once for all of it: one goroutine validates it chunk by
// chunk while the next chunk is read ahead on another, and the records it
// found valid are indexed (what the unfinished index file lost) and
// dispatched on a third while it reads on. The queues' and the index's
// starting points are therefore decided before the log is validated; a cut
// below the dispatch point takes both back to the cut. A read the disk fails
// is no verdict on the records: the open fails with that error and nothing
// is cut.
//
// At every start, clean or not, each consume queue is then checked against
// the coverage manifest (format and rules in coverage.go): a queue whose
// folder is gone, whose files are short or do not follow each other, whose
// head is missing or whose last entry does not point at its own record is
// cut back to its last good entry and refilled from its records in the
// CommitLog, one targeted pass over the log that touches no other queue;
// RecoveryReport.CQRepairs lists each with topic, queue and ranges (also
// logged). Intact queues cost a manifest read and three small reads each;
// the log is re-read only when a queue needs it, or once in full when the
// manifest is missing (RecoveryReport.CQCheck says so).
//
// Finished index files cost a start two small reads each (header and trailer); they are
// verified whole in the background once the store is open, and a damaged one is rebuilt
// from the CommitLog and swapped in (indexverify.go, Store.IndexCheck).
//
// # Durability contract
//
//	ASYNC_FLUSH  Append returns once the record is written to the file (page
//	             cache): it survives a process crash (kill -9), not a power
//	             cut. A background flusher fsyncs every FlushInterval, so a
//	             power cut loses at most about FlushInterval of appends;
//	             recovery drops any torn tail.
//	SYNC_FLUSH   Append returns the same way; the caller then waits on
//	             WaitFlush(res.EndOffset, deadline). nil means the record and
//	             everything before it are fsynced and survive a power cut.
//	             ErrFlushTimeout (FLUSH_DISK_TIMEOUT) means the deadline passed
//	             first: the record is stored but not known durable. Waiters
//	             are ordered by end offset; one fsync completes every waiter
//	             it covers (group commit); one sweeper expires deadlines.
//	             Senders that queue their records (AppendQueued) and end
//	             their burst with FlushQueued leave the write to the flusher,
//	             which writes everything queued right before each fsync: one
//	             write per fsync. Their callbacks run once the write covers
//	             them, before that fsync; no sender is told more than the
//	             fsync's outcome, so the answers mean what they did.
//
// In both modes a write or fsync failure turns the store read-only (Err
// says why): the failing append is not acknowledged, waiters get the error,
// earlier data stays readable, and the next Open runs crash recovery.
//
// # Memory
//
// Nothing is memory mapped. Reads and writes use pread/pwrite through the
// vfs.FS seam; memory holds one handle per segment and consume-queue file,
// per-queue bounds and a small encode buffer, so a store of many GiB needs a
// few MiB of Go heap.
package commitlog
