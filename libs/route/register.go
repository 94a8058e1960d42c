package route

import (
	"fmt"
	"hash/crc32"
)

// RegisterBrokerBody is the (uncompressed) body of REGISTER_BROKER.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// AppendRegisterBrokerBody writes b; filterServerList is always an array.
func AppendRegisterBrokerBody(dst []byte, b RegisterBrokerBody) []byte {
	dst = append(dst, `{"filterServerList":`...)
	dst = AppendStringList(dst, b.FilterServerList)
	dst = append(dst, `,"topicConfigSerializeWrapper":`...)
	dst = AppendTopicConfigSerializeWrapper(dst, b.TopicConfigSerializeWrapper)
	return append(dst, '}')
}

// MarshalJSON implements json.Marshaler with AppendRegisterBrokerBody.
func (b RegisterBrokerBody) MarshalJSON() ([]byte, error) {
	return AppendRegisterBrokerBody(nil, b), nil
}

// DecodeRegisterBrokerBody parses an uncompressed REGISTER_BROKER body
// (fastjson keys accepted; unknown 5.x fields such as the static-topic
// mappings are ignored).
func DecodeRegisterBrokerBody(data []byte) (RegisterBrokerBody, error) {
	var b RegisterBrokerBody
	if err := decodeLenient(data, &b); err != nil {
		return RegisterBrokerBody{}, err
	}
	fixTopicNames(b.TopicConfigSerializeWrapper.TopicConfigTable)
	return b, nil
}

// BodyCRC32 is the bodyCrc32 header value for body: CRC-32/IEEE masked with
// 0x7FFFFFFF, so it is never negative.
func BodyCRC32(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// CheckBodyCRC32 verifies a received bodyCrc32; 0 disables the check, as in
// Java's name server.
func CheckBodyCRC32(body []byte, crc int32) error {
	if crc == 0 {
		return nil
	}
	if got := BodyCRC32(body); got != crc {
		return fmt.Errorf("%w: header %d, body %d", ErrBodyCRC, crc, got)
	}
	return nil
}
