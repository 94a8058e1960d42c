// Package delaytest holds process-level tests of delay levels, consumer retries and dead
// letters: a name server and a master started from this checkout's binaries with short delay
// levels, driven by the unmodified rocketmq-client-go producer and push consumer.
//
// What the tests check:
//
//   - delayed sends (levels 1..3) arrive no earlier than their level, and within a small slack
//     after it (the slack distribution is logged);
//   - a consumer that returns ConsumeRetryLater gets the message again after the delay of level
//     3 + reconsumeTimes with a growing reconsume count, and past its MaxReconsumeTimes the
//     message lands in %DLQ%<group> with its original id and topic in properties;
//   - a master killed with -9 while delayed messages are pending delivers every one after the
//     restart; the copies delivered twice are exactly the deliveries after the last
//     delayOffset.json write, within the bound documented in package schedule;
//   - a master stopped cleanly while delayed messages are pending delivers each exactly once.
package delaytest
