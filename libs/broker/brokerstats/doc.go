// Package brokerstats counts what a broker stores and serves over time, as RocketMQ's
// BrokerStatsManager does, for VIEW_BROKER_STATS_DATA (mqadmin statsAll), the consumeTps of
// GET_CONSUME_STATS and the TPS keys of GET_BROKER_RUNTIME_INFO.
//
// # Items and windows
//
// An Item holds two running totals, value (messages or bytes) and times (requests), added to
// with atomic adds only. Sampling copies the totals into three rings, as RocketMQ's StatsItem:
// every 10 s into the minute ring (7 samples: one minute), every 10 min into the hour ring (7
// samples) and every hour into the day ring (25 samples). A window's Snapshot is the difference
// between its first and last sample: sum (value), tps (sum per second between the two samples)
// and avgpt (sum per request). An item sampled for the first time gets a zero sample one period
// earlier, so its first window is not empty: a topic that took 100 messages in the 10 s before
// its first sample shows tps 10 at once.
//
// # Names and keys
//
// The stats names and keys are RocketMQ's: TOPIC_PUT_NUMS and TOPIC_PUT_SIZE by topic,
// GROUP_GET_NUMS and GROUP_GET_SIZE by "topic@group", SNDBCK_PUT_NUMS by "topic@group" (the
// original topic of a message a consumer sent back), BROKER_PUT_NUMS and BROKER_GET_NUMS by the
// cluster name. Topic and group names cannot hold '@', so a key splits at its first '@'.
//
// # Costs and bounds
//
// A send finds its topic's items once per request (one read-locked map lookup, no allocation)
// and adds with atomic adds; a batch counts all its messages in the same adds. Pulls do the
// same with a (topic, group) struct key, so no key string is built per pull. Each set holds at
// most Config.MaxKeys keys (statsMaxKeys, about 1 KiB of samples each); past it new keys are
// not counted (the broker totals still are) and Refused counts them. Keys idle longer than
// Config.MaxIdle (RocketMQ 5's maxStatsIdleTimeInMinutes) are dropped when sampled; deleted
// topics and groups drop theirs.
//
// # Clock
//
// The core never reads the clock: Tick(now) runs the samplings that are due, and Run is the
// thin driver calling it every second.
package brokerstats
