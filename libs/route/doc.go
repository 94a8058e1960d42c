// Package route holds the JSON bodies that brokers and name servers exchange
// and that rocketmq-client-go reads: TopicRouteData (GET_ROUTEINFO_BY_TOPIC),
// ClusterInfo (GET_BROKER_CLUSTER_INFO), RegisterBrokerBody (REGISTER_BROKER)
// and the TopicConfig / DataVersion / TopicConfigSerializeWrapper shapes that
// the broker metadata tables persist and serve.
//
// # Encoding
//
// Every body has an AppendX encoder that writes compact JSON with the keys in
// the alphabetical order Java's fastjson uses. The Go client parses the
// route body partly by hand, so the encoder guarantees what it needs:
//
//   - no whitespace anywhere;
//   - brokerAddrs is always present (an absent field makes the client panic),
//     written as an object with quoted integer keys in ascending broker id
//     order, e.g. {"0":"10.0.0.1:10911","1":"10.0.0.2:10911"};
//   - queueDatas is always an array ([] when empty, never null);
//   - orderTopicConf is omitted when empty (when present the client treats the
//     topic as ordered and ignores queueDatas);
//   - filterServerTable is always present ({} when empty).
//
// The MarshalJSON methods delegate to the same encoders, so encoding/json
// produces the identical bytes.
//
// # Decoding
//
// Java's fastjson writes maps with integer keys without quotes
// ({0:"10.0.0.1:10911"}), which is not JSON. Every DecodeX function first
// passes the input through Lenient, which quotes bare integer object keys and
// leaves everything else untouched, and then uses encoding/json. Decoding of
// TopicConfig starts from Java's constructor defaults (16/16 queues, perm 6,
// SINGLE_TAG) so that fields missing from the input keep those values.
//
// # REGISTER_BROKER body CRC
//
// The bodyCrc32 header of REGISTER_BROKER is CRC-32/IEEE of the body masked
// with 0x7FFFFFFF (BodyCRC32); 0 means "not checked" (CheckBodyCRC32).
// The compressed registration variant is not implemented.
//
// # Permissions
//
// PermPriority, PermRead, PermWrite and PermInherit are the bits of the perm
// field of TopicConfig and QueueData; a producer only sends to queues of
// writable groups that have a master, a consumer only reads readable ones.
package route
