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
	// ErrNoRealTopic is returned by Restore (and wrapped with ErrNotScheduled) for
	// a scheduled record whose REAL_TOPIC is missing, empty or the schedule topic
	// itself, and by ToSchedule for a message already bound for the schedule
	// topic: delivering such a record would schedule it again, forever.
	ErrNoRealTopic = errors.New("schedule: no real topic to deliver to")
	// ErrInvalidConfig wraps Config.Validate failures; the message names the field.
	ErrInvalidConfig = errors.New("schedule: invalid config")
)
