package schedule

import "errors"

var (
	// ErrInvalidLevels is returned by ParseLevels for an empty table or a token
	// that is not <positive integer><s|m|h|d>; the message names the token.
	ErrInvalidLevels = errors.New("schedule: invalid delay levels")
	// ErrInvalidLevel is returned by ToSchedule for a level below 1.
	ErrInvalidLevel = errors.New("schedule: invalid delay level")
	// ErrNotScheduled is returned by Restore for a record that is not a
	// SCHEDULE_TOPIC_XXXX message carrying a usable REAL_TOPIC and REAL_QID.
	ErrNotScheduled = errors.New("schedule: not a scheduled message")
	// ErrInvalidConfig wraps Config.Validate failures; the message names the field.
	ErrInvalidConfig = errors.New("schedule: invalid config")
)
