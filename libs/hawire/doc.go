// Package hawire is the master→slave CommitLog replication protocol of the
// broker group: the wire frames and their codec, the pure replication state
// machines of both sides (MasterState, SlaveState), the epoch file, and thin
// TCP drivers (Master, Slave) around them.
//
// # Shape
//
// The slave dials the master's HA port (haListenPort, default 10912). The
// master speaks first with a Hello carrying a fresh nonce; the slave answers
// with a Handshake that names its group, reports its log (min/max offset,
// segment size, last epoch) and, when a secret is configured, proves it
// knows the secret with an HMAC over the nonce. The master checks it, finds
// the common point of the two logs from their epoch histories, and either
// answers Accept and streams Data frames from the slave's max offset, or
// sends an Error frame and closes. The slave appends every Data frame as is
// (AppendRaw) and acknowledges its written and flushed offsets after every
// append and at least every HeartbeatInterval. The master sends a Heartbeat
// when it had nothing to send for HeartbeatInterval. Either side drops a
// peer it has not heard from for HousekeepingInterval; bytes of a large
// frame still arriving count as being heard from, and the master's writes
// get a fresh deadline every 256 KiB, so a slow but moving link is kept.
//
//	slave                                     master
//	  | ----------------- TCP connect ---------> |
//	  | <---------------- HELLO(nonce) --------- |
//	  | ---- HANDSHAKE(group, offsets, epoch, -> |  validate, compare epochs
//	  |                 HMAC(secret, nonce))     |
//	  | <-------- ACCEPT(start, epochs) -------- |   or ERROR(code, offset) + close
//	  | <------- DATA(epoch, start, records) --- |  as soon as the log grows
//	  | ---------- ACK(written, flushed) ------> |  completes SYNC waiters
//	  | <------------- HEARTBEAT --------------- |  when idle
//
// # Frames
//
// All integers are big-endian; offsets are int64 and never negative. Every
// frame has the same envelope:
//
//	0       4    5
//	+-------+----+----------------------+
//	| len   |type| body (len-1 bytes)   |   len: uint32 = 1 + len(body)
//	+-------+----+----------------------+
//
// Limits are checked before the body is read: 4 KiB until the handshake is
// done (MaxHandshakeFrame), 1 MiB for control frames, 64 MiB for Data.
//
//	HELLO (1), master → slave
//	+--------+--------+--------+------------------+
//	| magic  | minVer | maxVer | nonce            |
//	| u32    | u16    | u16    | 32 bytes         |
//	+--------+--------+--------+------------------+
//
//	HANDSHAKE (2), slave → master
//	+-------+-----+-------+---------------+---------------+----------+
//	| magic | ver | flags | cluster str16 | broker str16  | brokerId |
//	| u32   | u16 | u16   | u16 len+bytes | u16 len+bytes | i64      |
//	+-------+-----+-------+---------------+---------------+----------+
//	| minOffset | maxOffset | segmentSize | lastEpoch | lastEpochStart |
//	| i64       | i64       | i64         | i64       | i64            |
//	+-----------+-----------+-------------+-----------+----------------+
//	| proofLen u8 | proof: HMAC-SHA256(secret, domain ‖ nonce ‖ body  |
//	|             |        with proofLen 0), 0 or 32 bytes             |
//	+-------------+----------------------------------------------------+
//
//	ACCEPT (3), master → slave
//	+-------+-------------+-----------+-----------+-----------+-------+--------------------+
//	| epoch | startOffset | masterMin | masterMax | confirmed | count | count × (epoch i64, |
//	| i64   | i64         | i64       | i64       | i64       | u32   |   startOffset i64) |
//	+-------+-------------+-----------+-----------+-----------+-------+--------------------+
//
//	DATA (4), master → slave
//	+-------+-------------+-----------+-----------+--------+--------------------------+
//	| epoch | startOffset | masterMax | confirmed | crc32c | whole CommitLog records  |
//	| i64   | i64         | i64       | i64       | u32    | (len-37 bytes)           |
//	+-------+-------------+-----------+-----------+--------+--------------------------+
//
//	HEARTBEAT (5), master → slave
//	+-------+-----------+-----------+------------+
//	| epoch | masterMax | confirmed | nextOffset |
//	+-------+-----------+-----------+------------+
//
//	ACK (6), slave → master
//	+---------+---------+
//	| written | flushed |
//	+---------+---------+
//
//	ERROR (7), either way, then close
//	+------+--------+-------------+
//	| code | offset | message     |
//	| u16  | i64    | str16       |
//	+------+--------+-------------+
//
// Data records use RocketMQ's CommitLog framing (int32 TOTALSIZE, int32
// MAGIC). A batch holds whole records only, never crosses a segment end or
// an epoch boundary, and a BLANK record (end-of-segment padding, sent with
// its padding bytes so the copies stay byte-identical) is always its last
// record and ends exactly at a segment end. The CRC is CRC-32C over the
// records. "confirmed" is the highest offset held by InSyncReplicas copies.
//
// # Versioning
//
// Magic and version appear only in HELLO and HANDSHAKE. The master
// advertises [minVer, maxVer]; the slave picks the highest version it also
// supports and the master answers UNSUPPORTED_VERSION when the choice is
// outside its range. Within one version, a frame may grow only by fields
// appended at its end; decoders ignore trailing bytes, so old peers keep
// working. Changing or removing a field, a new frame type a peer must
// understand, or a new meaning for an existing field needs a new version.
// Unknown frame types are a protocol error.
//
// # Errors and recovery
//
//	code                      offset          slave recovery
//	1 UNSUPPORTED_VERSION     -               stop (Failed)
//	2 NOT_AUTHORISED          -               retry with backoff, reported in Status
//	3 OFFSET_TOO_OLD          master min      OnTooOld=fail: stop; =wipe: Reset(min), re-copy
//	4 DIVERGED                common point    OnDiverged=truncate: Truncate(N), reconnect; =fail: stop
//	5 NOT_MASTER              -               rediscover and retry with backoff
//	6 WRONG_GROUP             -               retry with backoff, reported in Status
//	7 CONFIG_MISMATCH         master segsize  stop (Failed)
//	8 PROTOCOL                -               reconnect
//
// # Epochs and divergence
//
// Each log keeps (epoch, startOffset) entries in its epoch file; a master
// appends a new epoch at its MaxOffset every time it starts, so data written
// after a restart can never be confused with a tail another replica holds
// from before it. The slave sends its last epoch E and max offset M. The
// master looks up E in its own history (or, when it does not have E, the
// largest epoch below E): the end of that epoch in the master's log is the
// last offset the two logs can share, and the common point is min(M, that
// end). If the common point is below M the slave's tail differs: the master
// answers DIVERGED with the common point; the slave truncates there (log
// first, then epoch file, both crash-safe) and reconnects; the loop ends
// because each round removes at least one epoch from the slave's tail. A
// slave whose M is below the master's MinOffset gets OFFSET_TOO_OLD. An
// empty slave is sent everything from the master's MinOffset.
//
// # Acknowledgements and SYNC_MASTER
//
// "written" means the bytes are in the slave's log (page cache); "flushed"
// means on its disk. SYNC waiters complete on written offsets, as in
// RocketMQ. An ack that goes backwards, exceeds the master's MaxOffset or
// what was sent on that connection, or has flushed > written, closes the
// connection and is counted; it never moves the acknowledged offset. A slave
// is in sync while connected and no more than MaxGapNotInSync bytes behind
// the master's MaxOffset.
//
// Master.WaitReplicated(end, deadline) answers, for a message ending at end:
//
//	ReplOK                 InSyncReplicas copies (master included) hold it     SEND_OK
//	ReplTimeout            the deadline passed first; stored on the master     FLUSH_SLAVE_TIMEOUT
//	ReplSlaveNotAvailable  fewer than InSyncReplicas copies in sync when the   SLAVE_NOT_AVAILABLE
//	                       send arrived; stored on the master only
//
// Waiters are kept ordered by end offset; one ack completes every waiter it
// covers, and one timer completes expired ones at their deadline. In strict
// mode (MinInSyncReplicas > 1) Master.CanAccept returns ErrNotEnoughInSync
// before the message is stored. Without a Secret, anyone who can reach the
// HA port can speak the protocol: configure one, or firewall the port.
package hawire
