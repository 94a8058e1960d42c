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
// segment size, last epoch), carries its own fresh nonce and proves it
// knows the group's secret. The master checks the proof, finds the common
// point of the two logs from their epoch histories, and answers with a
// verdict that carries its own proof: Accept, then Data frames from the
// slave's max offset, or an Error frame and a close. The slave checks the
// master's proof before it acts on the verdict. It appends every Data frame
// as is (AppendRaw) and acknowledges its written and flushed offsets after
// every append and at least every HeartbeatInterval. The master sends a
// Heartbeat when it had nothing to send for HeartbeatInterval. Either side
// drops a peer it has not heard from for HousekeepingInterval; bytes of a
// large frame still arriving count as being heard from, and the master's
// writes get a fresh deadline every 256 KiB, so a slow but moving link is
// kept.
//
//	slave                                     master
//	  | ----------------- TCP connect ---------> |  (TLS when configured)
//	  | <------------ HELLO(master nonce) ------ |
//	  | ---- HANDSHAKE(group, offsets, epoch, -> |  check slave proof, compare epochs
//	  |       slave nonce, slave proof)          |
//	  | <--- ACCEPT(start, epochs, master proof) |  or ERROR(code, offset, epoch, min,
//	  |      check master proof, then stream     |        max, master proof) + close
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
// A proof field is a u8 length and that many bytes: 0 (no secret) or 32.
//
//	HELLO (1), master → slave
//	+--------+--------+--------+------------------+
//	| magic  | minVer | maxVer | master nonce     |
//	| u32    | u16    | u16    | 32 bytes         |
//	+--------+--------+--------+------------------+
//
//	HANDSHAKE (2), slave → master (version 2)
//	+-------+-----+-------+---------------+---------------+----------+
//	| magic | ver | flags | cluster str16 | broker str16  | brokerId |
//	| u32   | u16 | u16   | u16 len+bytes | u16 len+bytes | i64      |
//	+-------+-----+-------+---------------+---------------+----------+
//	| minOffset | maxOffset | segmentSize | lastEpoch | lastEpochStart |
//	| i64       | i64       | i64         | i64       | i64            |
//	+-----------+-----------+-------------+-----------+----------------+
//	| slave nonce | proofLen u8 | slave proof (see Proofs)           |
//	| 32 bytes    |             |                                    |
//	+-------------+-------------+------------------------------------+
//	(version 1 had no slave nonce; it still decodes, and is refused)
//
//	ACCEPT (3), master → slave
//	+-------+-------------+-----------+-----------+-----------+-------+--------------------+
//	| epoch | startOffset | masterMin | masterMax | confirmed | count | count × (epoch i64, |
//	| i64   | i64         | i64       | i64       | i64       | u32   |   startOffset i64) |
//	+-------+-------------+-----------+-----------+-----------+-------+--------------------+
//	| proofLen u8 | master proof over this ACCEPT                     |
//	+-------------+---------------------------------------------------+
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
//	+------+--------+-------------+--------------------------------------------+
//	| masterEpoch | masterMin | masterMax | proofLen u8 | master proof        |   trailer: a master's
//	| i64         | i64       | i64       |             | over this ERROR     |   refusal (version 2)
//	+-------------+-----------+-----------+-------------+---------------------+
//
// The trailer follows the message; a frame that ends after the message has
// none (what a slave sends, and a master's refusal before any handshake
// could be read). A master fills epoch, min and max only for a slave that
// proved itself; a stranger's NOT_AUTHORISED carries zeros.
//
// Data records use RocketMQ's CommitLog framing (int32 TOTALSIZE, int32
// MAGIC). A batch holds whole records only, never crosses a segment end or
// an epoch boundary, and a BLANK record (end-of-segment padding, sent with
// its padding bytes so the copies stay byte-identical) is always its last
// record and ends exactly at a segment end. The CRC is CRC-32C over the
// records, and it is the one checksum of the hop: the master does not
// re-verify the records' body CRCs when it reads them for a slave (its log
// checked them when it took them; RawReaderInto), and a slave whose log can
// take verified bytes (VerifiedAppender) appends what passed the frame CRC
// without checksumming it again, then builds its indexes from the same bytes.
// Record framing is checked on both sides. "confirmed" is the highest offset
// held by InSyncReplicas copies.
//
// # Proofs
//
// Both sides hold the group's shared secret (haSecret / haSecretFile, at
// least MinSecretLen bytes). Each proof is HMAC-SHA256 keyed with it, over
// a domain string that names its purpose (so neither can stand in for the
// other, nor for any other use of the secret) and both nonces (so neither
// verifies on another connection):
//
//	slave proof  = HMAC(secret, "rmqha/hawire v2 slave handshake proof\x00"
//	                     ‖ master nonce ‖ slave nonce
//	                     ‖ HANDSHAKE body with proofLen 0)
//	master proof = HMAC(secret, "rmqha/hawire v2 master verdict proof\x00"
//	                     ‖ master nonce ‖ slave nonce
//	                     ‖ str16 cluster ‖ str16 broker ‖ i64 brokerId
//	                     ‖ u8 len ‖ slave proof as received
//	                     ‖ u8 frame type (3 ACCEPT or 7 ERROR)
//	                     ‖ verdict body with proofLen 0)
//
// The slave proof covers its identity, offsets, segment size and epoch; the
// master proof binds its verdict to that handshake (the slave's identity
// and proof), to the frame type, and to everything in the verdict: for an
// Accept its epoch, start, log min and max, confirmed offset and epoch list;
// for an Error the code, offset, message and the trailer's epoch, min and
// max. Comparisons are constant-time (hmac.Equal). A replayed Handshake
// fails at the master (its nonce is new), a replayed verdict fails at the
// slave (its nonce is new). The master proves every verdict once it has
// read a version-2 handshake, including refusals sent later on the same
// connection (an ack violation, a slave that fell behind retention while
// streaming).
//
// Without a secret (AllowUnauthenticated, an explicit opt-out) both proof
// fields are empty and either side takes the other for who it claims to be.
//
// # What protects the stream after the handshake
//
// Nothing cryptographic: Data, Heartbeat and Ack frames carry no MAC (a
// per-byte MAC would cost every replicated byte a second pass; the CRC-32C
// of a Data frame catches accidents, not attacks). The proofs keep
// strangers out: a peer that can connect to the HA port or listen on the
// master's address but cannot alter an established TCP stream can neither
// pose as a slave nor as a master. An attacker on the path who can rewrite
// TCP segments can alter or inject records after the handshake; the answer
// to that threat is TLS on the HA link (MasterConfig.TLS, SlaveConfig.TLS; the
// broker's haTlsEnable), under which the proofs still run. Such an attacker still cannot make a
// slave truncate, wipe or stop: those need a proven Error frame, and the
// master proves its refusals with the connection's nonces.
//
// # Versioning
//
// Magic and version appear only in HELLO and HANDSHAKE. The master
// advertises [minVer, maxVer]; the slave picks the highest version it also
// supports and the master answers UNSUPPORTED_VERSION when the choice is
// outside its range. Within one version, a frame may grow only by fields
// appended at its end; decoders ignore trailing bytes after the fields they
// know, so old peers keep working. Changing or removing a field, a new frame
// type a peer must understand, or a new meaning for an existing field needs
// a new version. Unknown frame types are a protocol error.
//
// Version 2 (this one) added the slave nonce, the master proof in ACCEPT and
// the ERROR trailer, and changed both proofs' inputs. Version 1 is refused
// both ways (a version-1 master cannot prove itself, a version-1 slave
// cannot be answered with a proof): upgrade master and slaves together;
// until both run version 2 replication is refused, and a SYNC_MASTER
// answers SLAVE_NOT_AVAILABLE.
//
// # Errors and recovery
//
// A slave acts on an Error frame only when the master proved it (with a
// secret), its epoch is not below the slave's last epoch and it agrees with
// the slave's log; any other Error frame is a transient refusal: the slave
// reconnects after the backoff, counts it (SlaveStatus.Counters) and reports
// why (SlaveStatus.LastError, a warning naming the peer).
//
//	code                      offset          slave recovery (proven verdicts)
//	1 UNSUPPORTED_VERSION     -               stop (Failed)
//	2 NOT_AUTHORISED          -               retry with backoff, reported in Status
//	3 OFFSET_TOO_OLD          master min      OnTooOld=fail: stop; =wipe (needs AllowWipe): Reset(min), re-copy
//	4 DIVERGED                common point    above MinOffset: OnDiverged=truncate: Truncate(N); =fail: stop
//	                                          at or below MinOffset (nothing shared): Reset only with AllowWipe
//	5 NOT_MASTER              -               rediscover and retry with backoff
//	6 WRONG_GROUP             -               retry with backoff, reported in Status
//	7 CONFIG_MISMATCH         master segsize  stop (Failed)
//	8 PROTOCOL                -               reconnect with backoff
//
// The slave's rules, in SlaveState (pure: events and times in, decisions
// out):
//
//   - It never takes data from, truncates for or wipes for a master that
//     has not proven itself: an unproven Accept is refused before anything
//     is streamed.
//   - It refuses a master whose epoch (in the Accept, or the Error trailer)
//     is below its own last epoch.
//   - A master that shares nothing with a non-empty slave above its
//     MinOffset (DIVERGED at or below it, typically an empty or rebuilt
//     master), or whose log starts after the slave's end (OFFSET_TOO_OLD),
//     makes it wipe only with AllowWipe (an explicit operator setting,
//     logged at start and at every wipe); otherwise the verdict is refused.
//   - Truncation to a common point above MinOffset, from a proven master of
//     an epoch at least the slave's, stays automatic: a returning old master
//     cuts its divergent tail this way.
//   - Before every reconnect, whatever ended the previous connection (a
//     refusal, a truncation, a lost link, a failed dial), it waits: the bound
//     doubles from ReconnectMin to ReconnectMax and the wait is drawn in
//     [bound/2, bound); only a connection that streamed for ReconnectReset
//     resets it. No answer of a peer makes it dial in a loop.
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
// first, then epoch file, both crash-safe) and reconnects after the
// backoff; the loop ends because each round removes at least one epoch from
// the slave's tail. A slave whose M is below the master's MinOffset gets
// OFFSET_TOO_OLD. An empty slave is sent everything from the master's
// MinOffset.
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
// covers, and one timer completes expired ones at their deadline. A waiter
// registered with WaitReplicatedTo (or WaitReplicatedFunc) is a callback that the goroutine
// completing it (the ack reader, the timer, Close) calls once it has released
// the master's lock, so an ack answers the sends it covers directly. In strict
// mode (MinInSyncReplicas > 1) Master.CanAccept returns ErrNotEnoughInSync
// before the message is stored. A peer without the secret is refused
// NOT_AUTHORISED and never counts as a copy, so it cannot turn
// SLAVE_NOT_AVAILABLE into SEND_OK.
package hawire
