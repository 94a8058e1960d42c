package route

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
)

// MasterID is the broker id of a group's master; slaves use ids >= 1.
const MasterID int64 = 0

// QueueData describes a topic's queues on one broker group.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// AppendQueueData writes q in fastjson key order.
func AppendQueueData(dst []byte, q QueueData) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = appendString(dst, q.BrokerName)
	dst = append(dst, `,"perm":`...)
	dst = appendInt(dst, int64(q.Perm))
	dst = append(dst, `,"readQueueNums":`...)
	dst = appendInt(dst, int64(q.ReadQueueNums))
	dst = append(dst, `,"topicSysFlag":`...)
	dst = appendInt(dst, int64(q.TopicSysFlag))
	dst = append(dst, `,"writeQueueNums":`...)
	dst = appendInt(dst, int64(q.WriteQueueNums))
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler with AppendQueueData.
func (q QueueData) MarshalJSON() ([]byte, error) { return AppendQueueData(nil, q), nil }

// BrokerData lists the addresses of one broker group, keyed by broker id
// (0 = master).
type BrokerData struct {
	Cluster            string           `json:"cluster"`
	BrokerName         string           `json:"brokerName"`
	BrokerAddrs        map[int64]string `json:"brokerAddrs"`
	EnableActingMaster bool             `json:"enableActingMaster"`
	// ZoneName is a 5.x field, written only when set.
	ZoneName string `json:"zoneName,omitempty"`
}

// MasterAddr returns the master's address, or "" when the group has none.
func (b BrokerData) MasterAddr() string { return b.BrokerAddrs[MasterID] }

// Clone returns a deep copy (the address map is not shared).
func (b BrokerData) Clone() BrokerData {
	addrs := make(map[int64]string, len(b.BrokerAddrs))
	for k, v := range b.BrokerAddrs {
		addrs[k] = v
	}
	b.BrokerAddrs = addrs
	return b
}

// AppendBrokerData writes b in fastjson key order; brokerAddrs is always
// present, with quoted integer keys in ascending id order.
func AppendBrokerData(dst []byte, b BrokerData) []byte {
	dst = append(dst, `{"brokerAddrs":{`...)
	ids := make([]int64, 0, len(b.BrokerAddrs))
	for id := range b.BrokerAddrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = appendInt(dst, id)
		dst = append(dst, '"', ':')
		dst = appendString(dst, b.BrokerAddrs[id])
	}
	dst = append(dst, `},"brokerName":`...)
	dst = appendString(dst, b.BrokerName)
	dst = append(dst, `,"cluster":`...)
	dst = appendString(dst, b.Cluster)
	dst = append(dst, `,"enableActingMaster":`...)
	dst = appendBool(dst, b.EnableActingMaster)
	if b.ZoneName != "" {
		dst = append(dst, `,"zoneName":`...)
		dst = appendString(dst, b.ZoneName)
	}
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler with AppendBrokerData.
func (b BrokerData) MarshalJSON() ([]byte, error) { return AppendBrokerData(nil, b), nil }

// UnmarshalJSON accepts brokerAddrs keys as quoted decimal integers (run
// the input through Lenient first for fastjson's bare keys).
func (b *BrokerData) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var raw struct {
		Cluster            string            `json:"cluster"`
		BrokerName         string            `json:"brokerName"`
		BrokerAddrs        map[string]string `json:"brokerAddrs"`
		EnableActingMaster bool              `json:"enableActingMaster"`
		ZoneName           string            `json:"zoneName"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	addrs := make(map[int64]string, len(raw.BrokerAddrs))
	for k, v := range raw.BrokerAddrs {
		id, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: %q", ErrBrokerAddrKey, k)
		}
		addrs[id] = v
	}
	*b = BrokerData{
		Cluster:            raw.Cluster,
		BrokerName:         raw.BrokerName,
		BrokerAddrs:        addrs,
		EnableActingMaster: raw.EnableActingMaster,
		ZoneName:           raw.ZoneName,
	}
	return nil
}

// TopicRouteData is the body of a GET_ROUTEINFO_BY_TOPIC response.
type TopicRouteData struct {
	// OrderTopicConf ("brokerName:queueNum;...") is omitted when empty; when
	// set the Go client treats the topic as ordered and ignores QueueDatas.
	OrderTopicConf    string              `json:"orderTopicConf,omitempty"`
	QueueDatas        []QueueData         `json:"queueDatas"`
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"`
}

// AppendTopicRouteData writes r in the compact form rocketmq-client-go
// parses (see the package documentation).
func AppendTopicRouteData(dst []byte, r TopicRouteData) []byte {
	dst = append(dst, `{"brokerDatas":[`...)
	for i, b := range r.BrokerDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendBrokerData(dst, b)
	}
	dst = append(dst, `],"filterServerTable":{`...)
	for i, k := range sortedKeys(r.FilterServerTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendKey(dst, k)
		dst = AppendStringList(dst, r.FilterServerTable[k])
	}
	dst = append(dst, '}')
	if r.OrderTopicConf != "" {
		dst = append(dst, `,"orderTopicConf":`...)
		dst = appendString(dst, r.OrderTopicConf)
	}
	dst = append(dst, `,"queueDatas":[`...)
	for i, q := range r.QueueDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendQueueData(dst, q)
	}
	return append(dst, ']', '}')
}

// MarshalJSON implements json.Marshaler with AppendTopicRouteData.
func (r TopicRouteData) MarshalJSON() ([]byte, error) { return AppendTopicRouteData(nil, r), nil }

// DecodeTopicRouteData parses a route body from this package's encoder or
// from a Java name server (bare integer brokerAddrs keys).
func DecodeTopicRouteData(data []byte) (TopicRouteData, error) {
	var r TopicRouteData
	if err := decodeLenient(data, &r); err != nil {
		return TopicRouteData{}, err
	}
	return r, nil
}

// ClusterInfo is the body of a GET_BROKER_CLUSTER_INFO response.
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
}

// AppendClusterInfo writes c with sorted map keys and sorted broker-name
// lists.
func AppendClusterInfo(dst []byte, c ClusterInfo) []byte {
	dst = append(dst, `{"brokerAddrTable":{`...)
	for i, k := range sortedKeys(c.BrokerAddrTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendKey(dst, k)
		dst = AppendBrokerData(dst, c.BrokerAddrTable[k])
	}
	dst = append(dst, `},"clusterAddrTable":{`...)
	for i, k := range sortedKeys(c.ClusterAddrTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		names := append([]string(nil), c.ClusterAddrTable[k]...)
		sort.Strings(names)
		dst = appendKey(dst, k)
		dst = AppendStringList(dst, names)
	}
	return append(dst, '}', '}')
}

// MarshalJSON implements json.Marshaler with AppendClusterInfo.
func (c ClusterInfo) MarshalJSON() ([]byte, error) { return AppendClusterInfo(nil, c), nil }

// DecodeClusterInfo parses a cluster-info body (fastjson keys accepted).
func DecodeClusterInfo(data []byte) (ClusterInfo, error) {
	var c ClusterInfo
	if err := decodeLenient(data, &c); err != nil {
		return ClusterInfo{}, err
	}
	return c, nil
}
