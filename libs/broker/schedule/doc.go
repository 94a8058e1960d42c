// Package schedule is the delay-level delivery service: messages sent with a
// DELAY level (and consumer retries) wait in RocketMQ's schedule topic
// SCHEDULE_TOPIC_XXXX and are stored again in their real topic when due.
//
// # Storing a delayed message
//
// The broker's send path calls Levels.ToSchedule on a message whose DELAY
// property is 1 or more: the real topic and queue go to REAL_TOPIC and
// REAL_QID, the level (clamped to the highest level, as RocketMQ does) stays
// in DELAY, and the message is appended to SCHEDULE_TOPIC_XXXX queue
// level-1. The store's TagsCode hook (TagsCode) gives those consume-queue
// units the delivery time, store timestamp + delay of the level, in ms, as
// RocketMQ's tagsCode; other topics keep Java String.hashCode of TAGS.
//
// # Delivery
//
// Service runs one loop per level while it is started; the broker starts it
// only on a writable master and stops it on demotion, so a slave never
// delivers. A loop reads its queue from the level's offset in the
// DelayOffsetTable, waits with a timer for the head entry's delivery time
// (entries behind it are due no earlier), rebuilds the original message with
// Restore (DELAY and WAIT removed, everything else kept, a new store
// timestamp at append), hands it to the Putter and only then advances the
// level's offset. Order within a level is queue order. A failing Put is
// retried with exponential backoff (RetryBackoff up to MaxRetryBackoff),
// never skipped. A level with nothing queued sleeps until Notify (wired to
// the store's dispatch callback through OnDispatch) or IdleRecheck.
//
// Entries that cannot be delivered at all are logged and passed over: a
// record that no longer decodes, one without a valid REAL_TOPIC/REAL_QID,
// and entries removed by retention or unreadable in the store.
//
// # Progress and what a crash costs
//
// Each delivery updates the level's offset in the DelayOffsetTable at once
// (its DataVersion moves, so GET_ALL_DELAY_OFFSET and slaves see it), and
// the table is written to delayOffset.json every PersistInterval when it
// changed, and on Stop. Delivery is at least once:
//
//   - Stop, then Start (or a restart from the persisted table): every pending
//     message is delivered exactly once.
//   - kill -9 (or power loss after the Put's bytes were durable): each level
//     re-delivers exactly the messages it delivered after the start of the
//     last successful persist before the kill, plus at most the one message
//     whose Put had returned while its offset was not yet updated. With
//     persists succeeding, that is at most the deliveries of one
//     PersistInterval plus one delayOffset.json write, per level. A failed
//     persist (logged) widens the window until the next success. No message
//     is lost: an offset never passes a message before its Put returned nil.
//
// # Levels removed from the table
//
// Messages already stored at a level that a new configuration no longer has
// (messageDelayLevel shortened) stay in their schedule queue, undelivered;
// their offsets stay in the table unchanged, Start logs how many are pending,
// and configuring the level again resumes delivery from the saved offset.
// This is RocketMQ's behaviour. New messages above the highest level are
// clamped to it by ToSchedule. A level whose delay was shortened delivers
// entries stored with a longer delay at once (a delivery time further away
// than the level's delay is treated as due now).
package schedule
