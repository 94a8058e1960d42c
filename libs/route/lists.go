package route

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// TopicList and GroupList are the name-list bodies of GET_SYSTEM_TOPIC_LIST_FROM_BROKER and
// QUERY_TOPIC_CONSUME_BY_WHO, as fastjson writes them (fields sorted, brokerAddr only when set):
//
//	{"brokerAddr":"127.0.0.1:10911","topicList":["SCHEDULE_TOPIC_XXXX","TBW102"]}
//	{"groupList":["g1","g2"]}

// AppendTopicList writes a TopicList body with topics sorted.
func AppendTopicList(dst []byte, topics []string, brokerAddr string) []byte {
	dst = append(dst, '{')
	if brokerAddr != "" {
		dst = append(dst, `"brokerAddr":`...)
		dst = AppendString(dst, brokerAddr)
		dst = append(dst, ',')
	}
	dst = append(dst, `"topicList":`...)
	return append(AppendStringList(dst, sortedCopy(topics)), '}')
}

// AppendGroupList writes a GroupList body with groups sorted.
func AppendGroupList(dst []byte, groups []string) []byte {
	dst = append(dst, `{"groupList":`...)
	return append(AppendStringList(dst, sortedCopy(groups)), '}')
}

func sortedCopy(l []string) []string {
	out := append([]string{}, l...)
	sort.Strings(out)
	return out
}

// DecodeTopicList parses a TopicList body.
func DecodeTopicList(b []byte) (topics []string, brokerAddr string, err error) {
	var v struct {
		BrokerAddr string   `json:"brokerAddr"`
		TopicList  []string `json:"topicList"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return v.TopicList, v.BrokerAddr, nil
}

// DecodeGroupList parses a GroupList body.
func DecodeGroupList(b []byte) ([]string, error) {
	var v struct {
		GroupList []string `json:"groupList"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return v.GroupList, nil
}

// ConsumeStats is one topic of a group in ConsumeStatsList.
type ConsumeStats struct {
	ConsumeTps  float64
	OffsetTable map[MessageQueue]OffsetWrapper
}

// GroupConsumeStats is one group of ConsumeStatsList: its topics' ConsumeStats.
type GroupConsumeStats struct {
	Group string
	Stats []ConsumeStats
}

// ConsumeStatsList is GET_BROKER_CONSUME_STATS's body. fastjson writes it (fields sorted; the
// list holds one single-key object per group, each ConsumeStats as AppendConsumeStats writes it):
//
//	{"brokerAddr":"127.0.0.1:10911",
//	 "consumeStatsList":[{"g1":[{"consumeTps":0.0,"offsetTable":{{"brokerName":..}:{..}}}]}],
//	 "totalDiff":12,"totalInflightDiff":0}
type ConsumeStatsList struct {
	BrokerAddr        string
	Groups            []GroupConsumeStats
	TotalDiff         int64
	TotalInflightDiff int64
}

// AppendConsumeStatsList writes l as fastjson does.
func AppendConsumeStatsList(dst []byte, l ConsumeStatsList) []byte {
	dst = append(dst, `{"brokerAddr":`...)
	dst = AppendString(dst, l.BrokerAddr)
	dst = append(dst, `,"consumeStatsList":[`...)
	for i, g := range l.Groups {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		dst = AppendString(dst, g.Group)
		dst = append(dst, ":["...)
		for j, s := range g.Stats {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = AppendConsumeStats(dst, s.ConsumeTps, s.OffsetTable)
		}
		dst = append(dst, "]}"...)
	}
	dst = append(dst, `],"totalDiff":`...)
	dst = strconv.AppendInt(dst, l.TotalDiff, 10)
	dst = append(dst, `,"totalInflightDiff":`...)
	dst = strconv.AppendInt(dst, l.TotalInflightDiff, 10)
	return append(dst, '}')
}

// maxConsumeStatsGroups bounds the groups DecodeConsumeStatsList accepts.
const maxConsumeStatsGroups = 1 << 16

// DecodeConsumeStatsList parses what AppendConsumeStatsList writes (a Java broker's body too:
// fields in any order, unknown fields skipped).
func DecodeConsumeStatsList(b []byte) (ConsumeStatsList, error) {
	var out ConsumeStatsList
	s := &mqScanner{b: b}
	s.expect("{")
	for s.err == nil && s.peek() != '}' {
		kb := s.rawValue()
		var key string
		if s.err == nil {
			if err := json.Unmarshal(kb, &key); err != nil {
				s.fail("field name: %v", err)
			}
		}
		s.expect(":")
		if s.err != nil {
			break
		}
		switch key {
		case "consumeStatsList":
			s.expect("[")
			for s.err == nil && s.peek() != ']' {
				s.expect("{")
				for s.err == nil && s.peek() != '}' {
					gb := s.rawValue()
					var g GroupConsumeStats
					if s.err == nil {
						if err := json.Unmarshal(gb, &g.Group); err != nil {
							s.fail("group name: %v", err)
						}
					}
					s.expect(":")
					s.expect("[")
					for s.err == nil && s.peek() != ']' {
						raw := s.rawValue()
						if s.err != nil {
							break
						}
						tps, table, err := DecodeConsumeStats(raw)
						if err != nil {
							return out, err
						}
						g.Stats = append(g.Stats, ConsumeStats{ConsumeTps: tps, OffsetTable: table})
						if s.peek() == ',' {
							s.pos++
						}
					}
					s.expect("]")
					if s.err == nil {
						out.Groups = append(out.Groups, g)
						if len(out.Groups) > maxConsumeStatsGroups {
							s.fail("more than %d groups", maxConsumeStatsGroups)
						}
					}
					if s.peek() == ',' {
						s.pos++
					}
				}
				s.expect("}")
				if s.peek() == ',' {
					s.pos++
				}
			}
			s.expect("]")
		default:
			v := s.rawValue()
			if s.err != nil {
				break
			}
			var err error
			switch key {
			case "brokerAddr":
				err = json.Unmarshal(v, &out.BrokerAddr)
			case "totalDiff":
				err = json.Unmarshal(v, &out.TotalDiff)
			case "totalInflightDiff":
				err = json.Unmarshal(v, &out.TotalInflightDiff)
			}
			if err != nil {
				s.fail("%s: %v", key, err)
			}
		}
		if s.peek() == ',' {
			s.pos++
		}
	}
	s.expect("}")
	if s.err != nil {
		return ConsumeStatsList{}, s.err
	}
	return out, nil
}
