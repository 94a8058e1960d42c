package hawire

import (
	"encoding/binary"
	"fmt"
)

// CheckRecords walks RocketMQ CommitLog framing (int32 TOTALSIZE, int32 MAGIC)
// over b, which starts at log offset start, and reports whether b holds whole
// records only. A BLANK record (end-of-segment padding) must be the last
// record and, when segmentSize > 0, must end exactly at a segment end; no
// record may cross a segment end. It returns the number of records.
func CheckRecords(start int64, b []byte, segmentSize int64) error {
	_, err := countRecords(start, b, segmentSize)
	return err
}

func countRecords(start int64, b []byte, segmentSize int64) (int, error) {
	if segmentSize > 0 && len(b) > 0 {
		segEnd := (start/segmentSize + 1) * segmentSize
		if start+int64(len(b)) > segEnd {
			return 0, fmt.Errorf("%w: %d bytes at %d cross the segment end %d", ErrPartialRecord, len(b), start, segEnd)
		}
	}
	n := 0
	for pos := 0; pos < len(b); {
		if len(b)-pos < 8 {
			return n, fmt.Errorf("%w: %d trailing bytes at %d", ErrPartialRecord, len(b)-pos, start+int64(pos))
		}
		size := int64(int32(binary.BigEndian.Uint32(b[pos:])))
		magic := binary.BigEndian.Uint32(b[pos+4:])
		if size < 8 || size > int64(len(b)-pos) {
			return n, fmt.Errorf("%w: record size %d at %d, %d bytes left", ErrPartialRecord, size, start+int64(pos), len(b)-pos)
		}
		switch magic {
		case MagicV1, MagicV2:
		case MagicBlank:
			end := start + int64(pos) + size
			if int(size) != len(b)-pos {
				return n, fmt.Errorf("%w: BLANK at %d is not the last record", ErrPartialRecord, start+int64(pos))
			}
			if segmentSize > 0 && end%segmentSize != 0 {
				return n, fmt.Errorf("%w: BLANK at %d ends at %d, not a segment end", ErrPartialRecord, start+int64(pos), end)
			}
		default:
			return n, fmt.Errorf("%w: bad magic %#x at %d", ErrPartialRecord, magic, start+int64(pos))
		}
		pos += int(size)
		n++
	}
	return n, nil
}
