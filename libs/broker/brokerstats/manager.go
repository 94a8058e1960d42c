package brokerstats

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stats names, as RocketMQ's BrokerStatsManager names them.
const (
	TopicPutNums  = "TOPIC_PUT_NUMS"
	TopicPutSize  = "TOPIC_PUT_SIZE"
	GroupGetNums  = "GROUP_GET_NUMS"
	GroupGetSize  = "GROUP_GET_SIZE"
	SndbckPutNums = "SNDBCK_PUT_NUMS"
	BrokerPutNums = "BROKER_PUT_NUMS"
	BrokerGetNums = "BROKER_GET_NUMS"
)

// Config configures a Manager.
type Config struct {
	// ClusterName is the key of BROKER_PUT_NUMS and BROKER_GET_NUMS (RocketMQ keys them by
	// the broker's cluster name). Required.
	ClusterName string
	// MaxKeys is the most keys each family holds (topics; topic@group pairs of gets; of
	// send-backs); a key past it is not counted by key. About 1 KiB of samples per key and
	// name. 0 means no bound. Default 10000.
	MaxKeys int
	// MaxIdle drops a key whose counts have not moved for this long (RocketMQ 5's
	// maxStatsIdleTimeInMinutes), noticed at the 10 s samples. 0 keeps keys until their topic
	// or group is deleted. Default 0.
	MaxIdle time.Duration
	// IsSystemTopic tells which topics the "without system topics" totals leave out (RocketMQ's
	// msgPutTotalTodayNow counts only the others). Nil counts every topic.
	IsSystemTopic func(topic string) bool
	// Location is where a day starts, for the morning totals. Nil means time.Local.
	Location *time.Location
}

// DefaultConfig returns the defaults; ClusterName must still be set.
func DefaultConfig() Config {
	return Config{MaxKeys: 10000}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.ClusterName == "":
		return fmt.Errorf("%w: ClusterName is empty", ErrInvalidConfig)
	case c.MaxKeys < 0:
		return fmt.Errorf("%w: MaxKeys %d < 0 (0 means no bound)", ErrInvalidConfig, c.MaxKeys)
	case c.MaxIdle < 0:
		return fmt.Errorf("%w: MaxIdle %v < 0 (0 means never)", ErrInvalidConfig, c.MaxIdle)
	}
	return nil
}

// GroupKey names a GROUP_GET_* or SNDBCK_PUT_NUMS item: "topic@group" in RocketMQ's key.
type GroupKey struct {
	Topic, Group string
}

// String is RocketMQ's key, "topic@group".
func (k GroupKey) String() string { return k.Topic + "@" + k.Group }

// ParseGroupKey splits "topic@group" at its first '@' (neither name may hold one).
func ParseGroupKey(s string) (GroupKey, bool) {
	t, g, ok := strings.Cut(s, "@")
	return GroupKey{Topic: t, Group: g}, ok
}

// Pair is the two items of one key: messages (NUMS) and bytes (SIZE).
type Pair struct {
	Nums, Size Item
	system     bool // a system topic: not in the totals without system topics
}

func (p *Pair) sampleMinute(now, idleBefore int64) bool {
	a, b := p.Nums.sampleMinute(now, idleBefore), p.Size.sampleMinute(now, idleBefore)
	return a && b
}

func (p *Pair) sampleHour(now int64) { p.Nums.sampleHour(now); p.Size.sampleHour(now) }
func (p *Pair) sampleDay(now int64)  { p.Nums.sampleDay(now); p.Size.sampleDay(now) }

// Manager holds a broker's stats items (RocketMQ's BrokerStatsManager with its StoreStatsService
// and BrokerStats rates and morning totals).
type Manager struct {
	cfg Config

	topics   *set[string, *Pair]
	groups   *set[GroupKey, *Pair]
	sendBack *set[GroupKey, *Item]

	brokerPut, brokerGet Item
	putNoSys, getNoSys   atomic.Int64 // totals without system topics
	pullFound, pullMiss  atomic.Int64 // pull requests answered with and without messages

	mu         sync.Mutex // guards the sampling schedule, the rates and the morning totals
	started    bool
	nextMinute int64 // unix ms of the next minute, hour, day, second sample
	nextHour   int64
	nextDay    int64
	nextSecond int64
	rates      rates
	day        int // yyyymmdd of the last tick, in cfg.Location
	morning    Mornings
}

// Mornings are the totals without system topics at the start of today and of yesterday
// (RocketMQ's msgPutTotalTodayMorning, msgPutTotalYesterdayMorning, ...); zero until the
// broker has seen a day start.
type Mornings struct {
	PutYesterday, PutToday int64
	GetYesterday, GetToday int64
}

// New returns a Manager; the first Tick starts its sampling.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	return &Manager{
		cfg:      cfg,
		topics:   newSet[string, *Pair](cfg.MaxKeys),
		groups:   newSet[GroupKey, *Pair](cfg.MaxKeys),
		sendBack: newSet[GroupKey, *Item](cfg.MaxKeys),
	}, nil
}

func (m *Manager) system(topic string) bool {
	return m.cfg.IsSystemTopic != nil && m.cfg.IsSystemTopic(topic)
}

// Put counts a stored send of msgs messages and bytes body bytes into topic: one request of
// TOPIC_PUT_NUMS and TOPIC_PUT_SIZE, and the broker's put total.
func (m *Manager) Put(topic string, msgs, bytes int64) {
	p := m.topics.get(topic, func() *Pair { return &Pair{system: m.system(topic)} })
	m.brokerPut.Add(msgs, 0) // RocketMQ counts the broker totals without requests
	m.count(p, topic, msgs, bytes, &m.putNoSys)
}

// count adds one request of msgs messages and bytes bytes to p (nil: past statsMaxKeys, only
// the totals count) and, unless topic is a system topic, msgs to noSys.
func (m *Manager) count(p *Pair, topic string, msgs, bytes int64, noSys *atomic.Int64) {
	if p == nil {
		if !m.system(topic) {
			noSys.Add(msgs)
		}
		return
	}
	p.Nums.Add(msgs, 1)
	p.Size.Add(bytes, 1)
	if !p.system {
		noSys.Add(msgs)
	}
}

// Get counts a pull of group that found msgs messages (bytes bytes) in topic: GROUP_GET_NUMS
// and GROUP_GET_SIZE of topic@group, and the broker's get total.
func (m *Manager) Get(topic, group string, msgs, bytes int64) {
	k := GroupKey{Topic: topic, Group: group}
	p := m.groups.get(k, func() *Pair { return &Pair{system: m.system(topic)} })
	m.brokerGet.Add(msgs, 0)
	m.pullFound.Add(1)
	m.count(p, topic, msgs, bytes, &m.getNoSys)
}

// Miss counts a pull answered without messages (for getMissTps).
func (m *Manager) Miss() { m.pullMiss.Add(1) }

// SendBack counts a message of topic that group sent back for a retry (SNDBCK_PUT_NUMS).
func (m *Manager) SendBack(topic, group string) {
	if it := m.sendBack.get(GroupKey{Topic: topic, Group: group}, func() *Item { return &Item{} }); it != nil {
		it.Add(1, 1)
	}
}

// Lookup finds an item by RocketMQ's stats name and key; false when it does not exist (never
// counted, refused by the bound, or dropped).
func (m *Manager) Lookup(name, key string) (*Item, bool) {
	switch name {
	case TopicPutNums, TopicPutSize:
		p, ok := m.topics.lookup(key)
		if !ok {
			return nil, false
		}
		if name == TopicPutNums {
			return &p.Nums, true
		}
		return &p.Size, true
	case GroupGetNums, GroupGetSize:
		k, ok := ParseGroupKey(key)
		if !ok {
			return nil, false
		}
		p, ok := m.groups.lookup(k)
		if !ok {
			return nil, false
		}
		if name == GroupGetNums {
			return &p.Nums, true
		}
		return &p.Size, true
	case SndbckPutNums:
		k, ok := ParseGroupKey(key)
		if !ok {
			return nil, false
		}
		return m.sendBack.lookup(k)
	case BrokerPutNums, BrokerGetNums:
		it := &m.brokerPut
		if name == BrokerGetNums {
			it = &m.brokerGet
		}
		// As in RocketMQ the item exists once something was counted.
		if key != m.cfg.ClusterName || it.Value() == 0 {
			return nil, false
		}
		return it, true
	}
	return nil, false
}

// GroupGetTps is the minute tps of topic@group's GROUP_GET_NUMS (0 when unknown): the
// consumeTps of GET_CONSUME_STATS.
func (m *Manager) GroupGetTps(topic, group string) float64 {
	p, ok := m.groups.lookup(GroupKey{Topic: topic, Group: group})
	if !ok {
		return 0
	}
	return p.Nums.Minute().Tps
}

// OnTopicDeleted drops the topic's items and its groups' (RocketMQ's onTopicDeleted).
func (m *Manager) OnTopicDeleted(topic string) {
	m.topics.removeIf(func(t string) bool { return t == topic })
	m.groups.removeIf(func(k GroupKey) bool { return k.Topic == topic })
}

// OnGroupDeleted drops the group's items (RocketMQ's onGroupDeleted).
func (m *Manager) OnGroupDeleted(group string) {
	m.groups.removeIf(func(k GroupKey) bool { return k.Group == group })
	m.sendBack.removeIf(func(k GroupKey) bool { return k.Group == group })
}

// Keys reports how many keys each family holds and how many new keys the bound refused.
func (m *Manager) Keys() (topics, groups, sendBacks int, refused int64) {
	return m.topics.len(), m.groups.len(), m.sendBack.len(),
		m.topics.refused.Load() + m.groups.refused.Load() + m.sendBack.refused.Load()
}

// Totals are the running totals without system topics (msgPutTotalTodayNow,
// msgGetTotalTodayNow).
func (m *Manager) Totals() (put, get int64) { return m.putNoSys.Load(), m.getNoSys.Load() }

// Mornings returns the morning totals.
func (m *Manager) Mornings() Mornings {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.morning
}

// Tick runs the samplings due at now: the minute samples every 10 s, the hour samples every
// 10 min, the day samples every hour (all at the first Tick, as RocketMQ's fixed-rate tasks
// starting at once), the rates every second, and the morning totals when the day changed.
// A Tick far behind its schedule (a paused process) samples once and starts again from now.
func (m *Manager) Tick(now time.Time) {
	ms := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.started {
		m.started = true
		m.nextMinute, m.nextHour, m.nextDay, m.nextSecond = ms, ms, ms, ms
		m.day = dayOf(now, m.cfg.Location)
	}
	due := func(next *int64, period time.Duration) bool {
		if ms < *next {
			return false
		}
		p := period.Milliseconds()
		*next += p
		if *next <= ms {
			*next = ms + p
		}
		return true
	}
	if due(&m.nextSecond, time.Second) {
		m.rates.push(rateSample{at: ms, put: m.brokerPut.Value(), found: m.pullFound.Load(),
			miss: m.pullMiss.Load(), transferred: m.brokerGet.Value()})
	}
	if due(&m.nextMinute, MinutePeriod) {
		var idleBefore int64
		if m.cfg.MaxIdle > 0 {
			idleBefore = ms - m.cfg.MaxIdle.Milliseconds()
		}
		m.topics.sampleMinute(ms, idleBefore)
		m.groups.sampleMinute(ms, idleBefore)
		m.sendBack.sampleMinute(ms, idleBefore)
		m.brokerPut.sampleMinute(ms, 0)
		m.brokerGet.sampleMinute(ms, 0)
	}
	if due(&m.nextHour, HourPeriod) {
		m.topics.sampleHour(ms)
		m.groups.sampleHour(ms)
		m.sendBack.sampleHour(ms)
		m.brokerPut.sampleHour(ms)
		m.brokerGet.sampleHour(ms)
	}
	if due(&m.nextDay, DayPeriod) {
		m.topics.sampleDay(ms)
		m.groups.sampleDay(ms)
		m.sendBack.sampleDay(ms)
		m.brokerPut.sampleDay(ms)
		m.brokerGet.sampleDay(ms)
	}
	if d := dayOf(now, m.cfg.Location); d != m.day {
		// RocketMQ's BrokerStats.record at each morning.
		m.day = d
		m.morning.PutYesterday, m.morning.GetYesterday = m.morning.PutToday, m.morning.GetToday
		m.morning.PutToday, m.morning.GetToday = m.putNoSys.Load(), m.getNoSys.Load()
	}
}

func dayOf(t time.Time, loc *time.Location) int {
	y, mo, d := t.In(loc).Date()
	return y*10000 + int(mo)*100 + d
}
