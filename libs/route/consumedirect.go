package route

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ConsumeMessageDirectlyResult is the body a client answers CONSUME_MESSAGE_DIRECTLY (309) with
// after its listener consumed the message the broker handed it (Java's
// ConsumeMessageDirectlyResult):
//
//	{"order":false,"autoCommit":true,"consumeResult":"CR_SUCCESS","remark":"","spentTimeMills":3}
//
// Java writes consumeResult as the CMResult name; rocketmq-client-go writes the enum's ordinal
// (0 for CR_SUCCESS, the same order). The broker relays the body unread; mqadmin decodes both.
type ConsumeMessageDirectlyResult struct {
	Order          bool
	AutoCommit     bool
	ConsumeResult  string // a CMResult name (CMResults), or the number a client sent outside them
	Remark         string
	SpentTimeMills int64
}

// CMResults are Java's CMResult names, in ordinal order.
var CMResults = []string{"CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL"}

// AppendConsumeMessageDirectlyResult writes r as Java does (consumeResult by name).
func AppendConsumeMessageDirectlyResult(dst []byte, r ConsumeMessageDirectlyResult) []byte {
	dst = append(dst, `{"autoCommit":`...)
	dst = appendBool(dst, r.AutoCommit)
	dst = append(dst, `,"consumeResult":`...)
	dst = appendString(dst, r.ConsumeResult)
	dst = append(dst, `,"order":`...)
	dst = appendBool(dst, r.Order)
	dst = append(dst, `,"remark":`...)
	dst = appendString(dst, r.Remark)
	dst = append(dst, `,"spentTimeMills":`...)
	dst = appendInt(dst, r.SpentTimeMills)
	return append(dst, '}')
}

// DecodeConsumeMessageDirectlyResult parses the body (fields in any order, unknown ones
// ignored).
func DecodeConsumeMessageDirectlyResult(b []byte) (ConsumeMessageDirectlyResult, error) {
	var out ConsumeMessageDirectlyResult
	var raw struct {
		Order          bool            `json:"order"`
		AutoCommit     bool            `json:"autoCommit"`
		ConsumeResult  json.RawMessage `json:"consumeResult"`
		Remark         string          `json:"remark"`
		SpentTimeMills int64           `json:"spentTimeMills"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return out, fmt.Errorf("%w: ConsumeMessageDirectlyResult: %v", ErrSyntax, err)
	}
	out = ConsumeMessageDirectlyResult{Order: raw.Order, AutoCommit: raw.AutoCommit, Remark: raw.Remark, SpentTimeMills: raw.SpentTimeMills}
	v := bytes.TrimSpace(raw.ConsumeResult)
	switch {
	case len(v) == 0 || bytes.Equal(v, []byte("null")):
	case v[0] == '"':
		if err := json.Unmarshal(v, &out.ConsumeResult); err != nil {
			return ConsumeMessageDirectlyResult{}, fmt.Errorf("%w: consumeResult: %v", ErrSyntax, err)
		}
	default:
		var n int64
		if err := json.Unmarshal(v, &n); err != nil {
			return ConsumeMessageDirectlyResult{}, fmt.Errorf("%w: consumeResult %s is neither a name nor an ordinal", ErrSyntax, v)
		}
		out.ConsumeResult = fmt.Sprint(n)
		if n >= 0 && n < int64(len(CMResults)) {
			out.ConsumeResult = CMResults[n]
		}
	}
	return out, nil
}
