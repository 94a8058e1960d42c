package txn

import (
	"fmt"
	"strconv"
)

// Op record body. RocketMQ 4.9 writes the half's queue offset in RMQ_SYS_TRANS_HALF_TOPIC as
// decimal ASCII; 5.x may merge several, separated by commas:
//
//	+-------------------------------+
//	| "1234"  or  "1234,1240,1241"  |   UTF-8 (ASCII digits), no terminator
//	+-------------------------------+
//
// The record itself is an ordinary message in RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 with
// TAGS=d. This broker writes one offset per op record and reads both forms.

// MaxOpOffsets bounds how many offsets one op body may name (5.x merges at most a few dozen
// into one 4 KiB record).
const MaxOpOffsets = 4096

// AppendOpBody appends the body of the op record for the half at queue offset off.
func AppendOpBody(dst []byte, off int64) []byte { return strconv.AppendInt(dst, off, 10) }

// DecodeOpBody reads an op record body: the half queue offsets it resolves.
func DecodeOpBody(b []byte) ([]int64, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadOpBody)
	}
	var out []int64
	start := 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] != ',' {
			continue
		}
		v, err := strconv.ParseInt(string(b[start:i]), 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%w: %q", ErrBadOpBody, truncate(b))
		}
		if len(out) == MaxOpOffsets {
			return nil, fmt.Errorf("%w: more than %d offsets", ErrBadOpBody, MaxOpOffsets)
		}
		out = append(out, v)
		start = i + 1
	}
	return out, nil
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}
