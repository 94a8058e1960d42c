package timer

import "errors"

var (
	// ErrNotEnabled is returned by Transform for a timer message while timerWheelEnable is
	// false; the broker answers SYSTEM_ERROR as RocketMQ does (WHEEL_TIMER_NOT_ENABLE).
	ErrNotEnabled = errors.New("timer: timer messages are not enabled")
	// ErrIllegal is returned by Transform for a timer property that is not a number, a delay
	// beyond timerMaxDelaySec, or a delete marker (TIMER_DEL_UNIQKEY) for a time not in the
	// future; the broker answers
	// MESSAGE_ILLEGAL as RocketMQ does (WHEEL_TIMER_MSG_ILLEGAL).
	ErrIllegal = errors.New("timer: timer message illegal")
	// ErrNotTimer is returned by Restore for a record that is not in the timer topic or lacks
	// REAL_TOPIC, REAL_QID or TIMER_OUT_MS.
	ErrNotTimer = errors.New("timer: not a valid timer record")
	// ErrCorrupt is returned by the decoders for bytes that are not an entry or a checkpoint
	// (short, bad magic, bad CRC).
	ErrCorrupt = errors.New("timer: corrupt timer file")
	// ErrInvalidConfig is returned by Config.Validate and New.
	ErrInvalidConfig = errors.New("timer: invalid config")
)
