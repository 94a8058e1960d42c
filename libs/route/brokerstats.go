package route

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// BrokerStatsItem is one window of a broker stats item (VIEW_BROKER_STATS_DATA): the sum of
// the window, its rate per second and the average per request.
type BrokerStatsItem struct {
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"`
	Avgpt float64 `json:"avgpt"`
}

// BrokerStatsData is the body of VIEW_BROKER_STATS_DATA: the item's last minute, hour and day.
type BrokerStatsData struct {
	StatsMinute BrokerStatsItem `json:"statsMinute"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsDay    BrokerStatsItem `json:"statsDay"`
}

// AppendJavaDouble writes v as a Java double prints in JSON: the shortest digits that read
// back as v, with ".0" when whole (fastjson writes 3.0, not 3). NaN and infinities, which JSON
// cannot hold, are written as fastjson writes them: null.
func AppendJavaDouble(dst []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, "null"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, v, 'f', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, '.', '0')
}

func appendBrokerStatsItem(dst []byte, it BrokerStatsItem) []byte {
	dst = append(dst, `{"avgpt":`...)
	dst = AppendJavaDouble(dst, it.Avgpt)
	dst = append(dst, `,"sum":`...)
	dst = strconv.AppendInt(dst, it.Sum, 10)
	dst = append(dst, `,"tps":`...)
	dst = AppendJavaDouble(dst, it.Tps)
	return append(dst, '}')
}

// AppendBrokerStatsData writes BrokerStatsData as fastjson does (fields sorted):
//
//	{"statsDay":{"avgpt":1.0,"sum":12,"tps":0.0033},"statsHour":{...},"statsMinute":{...}}
func AppendBrokerStatsData(dst []byte, d BrokerStatsData) []byte {
	dst = append(dst, `{"statsDay":`...)
	dst = appendBrokerStatsItem(dst, d.StatsDay)
	dst = append(dst, `,"statsHour":`...)
	dst = appendBrokerStatsItem(dst, d.StatsHour)
	dst = append(dst, `,"statsMinute":`...)
	dst = appendBrokerStatsItem(dst, d.StatsMinute)
	return append(dst, '}')
}

// DecodeBrokerStatsData parses what AppendBrokerStatsData writes (a Java broker's body too;
// a missing window is zero, a null number is 0).
func DecodeBrokerStatsData(b []byte) (BrokerStatsData, error) {
	var d BrokerStatsData
	if err := json.Unmarshal(b, &d); err != nil {
		return BrokerStatsData{}, fmt.Errorf("%w: BrokerStatsData: %v", ErrSyntax, err)
	}
	return d, nil
}
