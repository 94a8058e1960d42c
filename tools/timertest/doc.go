// Package timertest runs RocketMQ 5 timer messages end to end: the project's name server,
// SYNC_MASTER master and slave binaries, driven by the unmodified rocketmq-client-go/v2
// (Message.WithDelayTimestamp, which sets TIMER_DELIVER_MS, and the TIMER_DELAY_SEC
// property). The tests hold the group to: every acknowledged timer message is delivered with
// its body intact, never before the time asked (the copy's TIMER_DEQUEUE_MS against the
// sender's clock, the same machine), the delivered copies are on the slave too, a kill -9 of
// the master with timers pending loses none and repeats few (counted from the queues'
// offsets), and delay levels keep working beside timers. Lateness percentiles are logged.
package timertest
