// Package timer serves RocketMQ 5 timer messages: a send with TIMER_DELIVER_MS,
// TIMER_DELAY_SEC or TIMER_DELAY_MS waits in rmq_sys_wheel_timer and is stored in its real
// topic when due.
//
// # Sending
//
// The broker's send path calls Rules.Transform (RocketMQ's HookUtils.handleScheduleMessage):
// the deliver time (absolute, or relative to the broker's receive time) is validated
// (ErrIllegal: not a number, more than timerMaxDelaySec ahead; ErrNotEnabled: timerWheelEnable
// off), rounded down to timerPrecisionMs into TIMER_OUT_MS, the real topic and queue saved in
// REAL_TOPIC and REAL_QID, and the message appended to rmq_sys_wheel_timer queue 0 through the
// normal send path (flush and replication waits included). A deliver time already past leaves
// the message in its own topic: due at once. A DELAY level wins over timer properties, which
// are then removed.
//
// # The index, and why not RocketMQ's wheel
//
// RocketMQ keeps a timer log (a linked list per slot) and a memory-mapped wheel of
// 2*timerRollWindowSlot slots. Here the index is time-bucketed files (index.go): a bucket
// covers BucketSpan (60 s) of slots and holds 32-byte entries (slot, queue offset, CommitLog
// offset, size, CRC) in indexing order. Only the bucket being delivered is read into memory
// (a heap ordered by slot, then queue offset), so memory is bounded by the timers of one
// bucket, not by the number pending; a timer far ahead costs 32 bytes of disk. Entries go by
// queue offset, and the record is read again from the CommitLog when it fires: the timer
// topic's records are the truth, the index only orders them.
//
// # Progress, crashes and failover
//
// The checkpoint (format.go) holds the synced offset (the timer queue's entries below it
// are in index files fsynced before the checkpoint was written: a background goroutine
// fsyncs the buckets written every IndexSyncInterval, 10 s), the written offset (entries
// below it were written, perhaps not yet fsynced) and the cursor (every slot before it is
// delivered, and in its own slot every entry up to a queue offset: delivery within a slot
// goes in queue offset order). It is written every FlushInterval (timerFlushIntervalMs) and on Stop. After a
// kill -9 the records from the synced offset are read again: one below the written offset
// whose own bucket holds it, or was delivered and removed, is passed over; one missing from
// its bucket (an index write lost with the machine) is indexed again. Delivery resumes after
// the cursor, so the timers delivered since the last checkpoint (at most one FlushInterval
// of deliveries) are delivered again; the delivered copies the dispatcher replays at start
// move the cursor further (Observe), which usually leaves none. Nothing is lost: the cursor never passes a timer before its Put
// returned. A missing or damaged checkpoint re-indexes the whole timer queue from the
// CommitLog and re-delivers what it still holds (at least once).
//
// Every role runs the loop: a replica indexes the timer records it replicates, and follows
// the master's progress through the delivered copies it dispatches (Observe, fed by the
// store's TagsCode hook: a copy carries TIMER_SOURCE, "<slot>:<queue offset>" of its index
// entry, and TIMER_DEQUEUE_MS), and writes its own checkpoint. Only a writable master
// delivers (StartDelivery on promotion, StopDelivery on demotion); a promoted replica
// resumes right after the last copy it replicated, so it re-delivers only what the old
// master delivered but had not replicated yet. This is the mechanism the delay levels use
// (DELAY_SOURCE). A copy claiming a slot later than now is ignored; a master, once
// delivering, trusts its own progress only (a client can set any property).
//
// Under ASYNC_FLUSH a delivered copy reaches the disk within the store's flush interval while
// the checkpoint is fsynced at once: a power cut can lose deliveries of the last flush
// interval (as for delay levels).
//
// # Delivery
//
// A slot K fires once now >= K + timerPrecisionMs, so a timer is never delivered before the
// time the client asked for. The copy is the original message (body, flag, properties) in
// REAL_TOPIC/REAL_QID with REAL_TOPIC, REAL_QID and WAIT removed and TIMER_ENQUEUE_MS and
// TIMER_DEQUEUE_MS added, appended through the broker's normal append (as RocketMQ's
// convertMessage). A failing Put is retried with backoff, never skipped. A timer indexed
// after its slot was passed (the index was behind) fires in the cursor's slot.
//
// # Cancellation
//
// RocketMQ 5 cancels a pending timer with a delete marker: a timer message for the same
// topic and the same deliver time whose TIMER_DEL_UNIQKEY is DeleteKey(topic, UNIQ_KEY of
// the timer), "<topic>+<message id>" (TimerMessageStore.buildDeleteKey; its
// RecallMessageProcessor builds the same). The marker is transformed and stored like any
// timer (a marker for a time not in the future is MESSAGE_ILLEGAL) and indexed with its entry
// flagged (format.go), so it is in the index files after a restart, is rebuilt from the log
// with the rest, and a replica indexes it from what it replicates. When a slot is delivered
// the keys of its markers are read first (Core.Markers, which keeps the markers of the
// cursor's slot even once passed); a timer of the slot whose REAL_TOPIC+"+"+UNIQ_KEY a marker
// names is not stored (Stats.Cancelled), and the marker itself is never stored. A marker is
// stored before its deliver time, at most the end of its slot, so delivery never passes the
// store time of the last record indexed while the index is behind (a restart, a promotion):
// a slot is delivered only once its markers are indexed, as RocketMQ's dequeue waits for its
// enqueue. As in
// RocketMQ, a marker only cancels within its own slot: one for another deliver time, or
// arriving after its slot was delivered, cancels nothing. A cancelled timer leaves no copy,
// so a promoted replica meets the marker again and cancels again.
//
// Not served: flow control per slot (timerCongestNumEachSlot) is not applied.
package timer
