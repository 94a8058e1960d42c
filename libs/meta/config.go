package meta

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/route"
)

// Names of the table files under <StorePathRootDir>/config/.
const (
	TopicsFileName            = "topics.json"
	SubscriptionGroupFileName = "subscriptionGroup.json"
	ConsumerOffsetFileName    = "consumerOffset.json"
	DelayOffsetFileName       = "delayOffset.json"
	configDirName             = "config"
)

// DataVersion and TopicConfig are the wire types of package route.
type (
	DataVersion = route.DataVersion
	TopicConfig = route.TopicConfig
)

// Config configures the metadata tables. One Config is shared by all four.
type Config struct {
	// StorePathRootDir is the broker's store root; table files live in its
	// config/ subfolder. Empty keeps every table in memory only. Default "".
	StorePathRootDir string
	// BrokerClusterName names the cluster system topic. Default "DefaultCluster".
	BrokerClusterName string
	// BrokerName names the broker system topic. Default "DEFAULT_BROKER";
	// always configure it.
	BrokerName string
	// AutoCreateTopicEnable creates TBW102 at start and lets sends create
	// topics from it. Default true.
	AutoCreateTopicEnable bool
	// DefaultTopicQueueNums is the queue count of TBW102 (the upper bound of
	// auto-created topics). Default 8.
	DefaultTopicQueueNums int32
	// AutoCreateSubscriptionGroup creates unknown groups on first use. Default true.
	AutoCreateSubscriptionGroup bool
	// AutoCreateSubscriptionGroupLimit stops auto-creation once the group
	// table holds this many groups (Put, used by admin requests, is not
	// limited); 0 means no limit. Default 10000.
	AutoCreateSubscriptionGroupLimit int
	// AutoCreateTopicLimit stops sends from creating topics once the topic
	// table holds this many topics, retry topics included (admin updates,
	// retry and dead-letter topics are not limited by it); 0 means no limit.
	// Default 20000.
	AutoCreateTopicLimit int
	// PersistBatchInterval is the longest a change made with Batch waits
	// before its table is rewritten; 0 means the default. Default 500ms.
	PersistBatchInterval time.Duration
	// PersistBatchSize rewrites a table at once when this many of its
	// changes are unwritten; 0 means the default. Default 1000.
	PersistBatchSize int
	// FS is the file-system seam. Default vfs.Default (the OS).
	FS FS
	// Now is the clock for DataVersion timestamps. Default time.Now.
	Now func() time.Time
	// Logger receives load fallbacks and table changes. Default a new logrus
	// logger writing to stderr.
	Logger logrus.FieldLogger
}

// Defaults of the batched table writes.
const (
	defaultPersistBatchInterval = 500 * time.Millisecond
	defaultPersistBatchSize     = 1000
)

// DefaultConfig returns the production defaults (in-memory; set
// StorePathRootDir to persist).
func DefaultConfig() Config {
	return Config{
		BrokerClusterName:                "DefaultCluster",
		BrokerName:                       "DEFAULT_BROKER",
		AutoCreateTopicEnable:            true,
		DefaultTopicQueueNums:            8,
		AutoCreateSubscriptionGroup:      true,
		AutoCreateSubscriptionGroupLimit: 10000,
		AutoCreateTopicLimit:             20000,
		PersistBatchInterval:             defaultPersistBatchInterval,
		PersistBatchSize:                 defaultPersistBatchSize,
		FS:                               vfs.Default,
		Now:                              time.Now,
		Logger:                           logrus.New(),
	}
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	switch {
	case ValidateTopicName(c.BrokerClusterName) != nil:
		return fmt.Errorf("%w: BrokerClusterName %q is not a valid topic name", ErrInvalidConfig, c.BrokerClusterName)
	case ValidateTopicName(c.BrokerName) != nil:
		return fmt.Errorf("%w: BrokerName %q is not a valid topic name", ErrInvalidConfig, c.BrokerName)
	case c.DefaultTopicQueueNums <= 0:
		return fmt.Errorf("%w: DefaultTopicQueueNums must be > 0, got %d", ErrInvalidConfig, c.DefaultTopicQueueNums)
	case c.AutoCreateSubscriptionGroupLimit < 0:
		return fmt.Errorf("%w: AutoCreateSubscriptionGroupLimit must be >= 0, got %d", ErrInvalidConfig, c.AutoCreateSubscriptionGroupLimit)
	case c.AutoCreateTopicLimit < 0:
		return fmt.Errorf("%w: AutoCreateTopicLimit must be >= 0, got %d", ErrInvalidConfig, c.AutoCreateTopicLimit)
	case c.PersistBatchInterval < 0:
		return fmt.Errorf("%w: PersistBatchInterval must be >= 0, got %v", ErrInvalidConfig, c.PersistBatchInterval)
	case c.PersistBatchSize < 0:
		return fmt.Errorf("%w: PersistBatchSize must be >= 0, got %d", ErrInvalidConfig, c.PersistBatchSize)
	case c.FS == nil:
		return fmt.Errorf("%w: FS is nil", ErrInvalidConfig)
	case c.Now == nil:
		return fmt.Errorf("%w: Now is nil", ErrInvalidConfig)
	case c.Logger == nil:
		return fmt.Errorf("%w: Logger is nil", ErrInvalidConfig)
	}
	return nil
}

// ValidateTopicName applies RocketMQ's topic rules: 1..127 characters from
// [%|a-zA-Z0-9_-].
func ValidateTopicName(name string) error {
	if name == "" || len(name) > 127 {
		return fmt.Errorf("%w: %q (length %d)", ErrInvalidTopic, name, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c == '%' || c == '|' || c == '_' || c == '-' ||
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
		if !ok {
			return fmt.Errorf("%w: %q has character %q", ErrInvalidTopic, name, c)
		}
	}
	return nil
}

// batchInterval and batchSize apply the defaults to zero values.
func (c Config) batchInterval() time.Duration {
	if c.PersistBatchInterval <= 0 {
		return defaultPersistBatchInterval
	}
	return c.PersistBatchInterval
}

func (c Config) batchSize() uint64 {
	if c.PersistBatchSize <= 0 {
		return defaultPersistBatchSize
	}
	return uint64(c.PersistBatchSize)
}

func validateGroupName(name string) error {
	if err := ValidateTopicName(name); err != nil {
		return fmt.Errorf("%w: %q", ErrInvalidGroup, name)
	}
	return nil
}

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }

func appendBool(dst []byte, v bool) []byte { return strconv.AppendBool(dst, v) }
