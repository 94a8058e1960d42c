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
// A loop reads up to 32 entries (about 256 KiB) per round. A unit whose
// tags code is not a delivery time (stored without the TagsCode hook) is due
// at its store timestamp + the level's delay.
//
// Entries that cannot be delivered at all are logged and passed over: a
// record without a valid REAL_TOPIC/REAL_QID, entries removed by retention
// and units the store reports as invalid. A record whose REAL_TOPIC is
// missing, empty or SCHEDULE_TOPIC_XXXX itself is delivered nowhere and
// counted (LevelStats.Refused): delivered into its own topic it would be
// read and delivered again forever. Brokers refuse client sends into the
// schedule topic, but a store written before that check may hold such a
// loop; it stops at the first restart on this version. ToSchedule refuses a
// message already bound for the schedule topic (ErrNoRealTopic). A consume queue that cannot be read
// at all (I/O error) is retried every MaxRetryBackoff instead: skipping would
// lose a whole queue file.
//
// # Offsets that do not fit the queue
//
// Below the queue's first entry (retention): moved up to it. Beyond the
// queue's end, or a missing queue with a non-zero offset: right after a
// promotion this is usually the dispatcher still building consume queues
// from replicated records, so the offset is left alone until every record
// present when it was first seen is dispatched; if the queue is still
// shorter then, the store really lost that tail (truncation, a fresh copy)
// and the offset moves to the queue's end. Moving back early would
// re-deliver a level's history in bulk.
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
//   - kill -9: each level re-delivers the messages it delivered after the
//     snapshot of the last delayOffset.json written before the kill (taken
//     when that write started), plus at most one message whose Put had
//     returned but whose offset update had not yet happened at that moment.
//     With persists succeeding, that is at most the deliveries of one
//     PersistInterval plus the time of one delayOffset.json write, per level.
//     A failed persist (logged) widens the window until the next success. No
//     message is lost: an offset never passes a message before its Put
//     returned nil.
//   - Power loss under ASYNC_FLUSH: delayOffset.json is fsynced when written
//     but a delivered copy reaches the disk only within the store's
//     FlushInterval, so a power cut can lose deliveries of the last
//     FlushInterval whose offsets were already written. A Putter that waits
//     for the flush (SYNC_FLUSH) closes that gap.
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
//
// # Wiring into a broker
//
//	levels, _ := schedule.ParseLevels(cfg.MessageDelayLevel)
//	storeCfg.TagsCode = schedule.TagsCode(levels)          // before commitlog.Open
//	svc, _ := schedule.New(scfg, store, tables.Delay, putter)
//	store.OnDispatch(svc.OnDispatch)                        // wakes idle levels
//	// send path, DELAY >= 1 on a non-batch message:  levels.ToSchedule(msg, level)
//	// send-back: levels.ToSchedule(msg, schedule.RetryLevel(delayLevel, reconsumeTimes))
//	// writable master: svc.Start(); demotion and shutdown: svc.Stop()
package schedule
