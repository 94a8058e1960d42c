package meta

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidConfig is returned by Config.Validate; the message names the field.
	ErrInvalidConfig = errors.New("meta: invalid config")
	// ErrCorrupt is returned when a table file and its .bak are both unusable.
	ErrCorrupt = errors.New("meta: corrupt metadata file")
	// ErrInvalidTopic is returned for a topic name RocketMQ would reject
	// (empty, longer than 127 characters, or characters outside [%|a-zA-Z0-9_-]).
	ErrInvalidTopic = errors.New("meta: invalid topic name")
	// ErrInvalidGroup is returned for an unusable group name (same rules as topics).
	ErrInvalidGroup = errors.New("meta: invalid group name")
	// ErrTopicNotExist is returned by CreateTopicInSendMessage when neither the
	// topic nor its default (template) topic exists.
	ErrTopicNotExist = errors.New("meta: topic does not exist")
	// ErrNoInheritPerm is returned by CreateTopicInSendMessage when the default
	// topic lacks the inherit permission (auto-create refused).
	ErrNoInheritPerm = errors.New("meta: default topic does not allow auto-create")
	// ErrGroupNotExist is returned by FindOrCreate when the group is unknown and
	// auto-create is disabled.
	ErrGroupNotExist = errors.New("meta: subscription group does not exist")
	// ErrGroupLimit is returned by FindOrCreate when the group is unknown and
	// the table already holds AutoCreateSubscriptionGroupLimit groups; it
	// wraps ErrGroupNotExist.
	ErrGroupLimit = fmt.Errorf("%w: auto-create limit reached", ErrGroupNotExist)
	// ErrTopicLimit is returned by CreateTopicInSendMessage when the topic is
	// unknown and the table already holds AutoCreateTopicLimit topics; it
	// wraps ErrTopicNotExist (RocketMQ answers a topic a send cannot create
	// TOPIC_NOT_EXIST).
	ErrTopicLimit = fmt.Errorf("%w: auto-create limit reached", ErrTopicNotExist)
	// ErrInvalidSnapshot is returned when a snapshot or file body cannot be
	// decoded or fails validation.
	ErrInvalidSnapshot = errors.New("meta: invalid snapshot")
)
