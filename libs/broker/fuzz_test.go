package broker

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeBatchRoundTrip(t *testing.T) {
	body := batchBody([]string{"a", "", "ccc"}, []string{props("TAGS", "x"), "", ""})
	ms, err := decodeBatch(body)
	require.NoError(t, err)
	require.Len(t, ms, 3)
	require.Equal(t, "a", string(ms[0].body))
	require.Equal(t, props("TAGS", "x"), ms[0].properties)
	require.Equal(t, "ccc", string(ms[2].body))
	_, err = decodeBatch(nil)
	require.ErrorIs(t, err, ErrBadBatch)
	_, err = decodeBatch(body[:len(body)-1])
	require.ErrorIs(t, err, ErrBadBatch)
}

// FuzzDecodeBatch: batch bodies come from the network; any bytes must decode or fail cleanly,
// and what decodes must re-encode to the same bytes (magic and CRC are ignored, so zero them).
func FuzzDecodeBatch(f *testing.F) {
	f.Add(batchBody([]string{"b1", "b2"}, []string{props("TAGS", "t"), ""}))
	f.Add([]byte{0, 0, 0, 22, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := decodeBatch(data)
		if err != nil {
			return
		}
		bodies := make([]string, len(ms))
		ps := make([]string, len(ms))
		for i, m := range ms {
			bodies[i], ps[i] = string(m.body), m.properties
		}
		again := batchBody(bodies, ps)
		// Compare with flags, magic and CRC cleared in the input.
		norm := append([]byte(nil), data...)
		for off := 0; off < len(norm); {
			total := int(uint32(norm[off])<<24 | uint32(norm[off+1])<<16 | uint32(norm[off+2])<<8 | uint32(norm[off+3]))
			for i := off + 4; i < off+16; i++ {
				norm[i] = 0
			}
			off += total
		}
		if !bytes.Equal(again, norm) {
			t.Fatalf("round trip differs")
		}
	})
}
