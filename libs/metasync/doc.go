// Package metasync holds the shared parts of the metadata replication between a
// master and its slaves: the announcement subjects and messages carried by NATS,
// the snapshot envelope served by the metasync service, an HTTP client for it,
// a remoting puller for the fallback, and the slave-side Follower.
//
// # Flow
//
//	master --GET_ALL_* every syncInterval--> metasync --snapshot on disk, /snapshot/...
//	metasync --Announcement on rmqha.meta.<cluster>.<brokerName>.<table>--> NATS --> Follower
//	Follower --GET /snapshot/<cluster>/<brokerName>/<table>--> metasync, then apply + persist
//	Follower --GET_ALL_* every FallbackInterval--> master   (no NATS, or metasync down)
//
// NATS is the doorbell, never the source of truth: an announcement carries the
// new DataVersion (and a content digest), not the table. A lost announcement
// costs latency only: the follower catches up through metasync each time its
// NATS connection comes (back) up and runs a full sync every FallbackInterval.
//
// # Subjects
//
//	<prefix>.<cluster>.<brokerName>.<table>         Announcement (metasync publishes)
//	<prefix>status.<cluster>.<brokerName>.<brokerId>  FollowerReport (slaves publish)
//	<prefix>changed.<cluster>.<brokerName>           doorbell to metasync: pull this group now
//
// prefix defaults to "rmqha.meta"; table is one of topics, subscriptionGroups,
// consumerOffsets, delayOffsets (AllTables). Names are escaped with EscapeToken
// (bytes outside [A-Za-z0-9_|-] become %XX). A slave subscribes to
// <prefix>.<cluster>.<brokerName>.* .
//
// # Snapshots
//
// metasync serves GET /snapshot/<cluster>/<brokerName>/<table> (path-escaped
// names) with a Snapshot envelope in JSON: names, the master's DataVersion
// (hasVersion false when the body had none, as Java 4.x offset tables), a
// digest of the body, the master's address and epoch, metasync's sequence,
// the fetch time, explicit offset resets, and the master's table body itself
// in standard JSON (Java's bare integer map keys quoted). 404 means nothing is
// held; 503 means the instance does not own the broker group (another
// instance holds its lock), and a client tries the next URL.
//
// # Apply rules (Follower)
//
//   - topics, subscription groups: replaced whole, deletes propagate, the
//     master's DataVersion is adopted (meta's ApplySnapshot, which persists);
//   - consumer offsets: merged, an offset is never lowered; the only exception
//     is an OffsetReset (listed in the snapshot) whose version is newer than the
//     last reset applied for that topic@group; then Persist;
//   - delay offsets: applied as they are, then Persist.
//
// A snapshot equal to the one held (same DataVersion, or same digest without
// one) is not applied again, so duplicate announcements (two metasync
// instances, a restarted one) change nothing. A metasync snapshot strictly
// older than the one held (timestamp and counter both lower, same epoch) is
// ignored; a master pull is always applied, since the master is the authority.
package metasync
