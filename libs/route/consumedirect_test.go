package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// What rocketmq-client-go v2 answers (json.Marshal of its struct, consumeResult an ordinal).
const goDirectResult = `{"order":false,"autoCommit":true,"consumeResult":0,"remark":"","spentTimeMills":2}`

// What Java's client answers (fastjson, the CMResult by name).
const javaDirectResult = `{"autoCommit":true,"consumeResult":"CR_LATER","order":false,"remark":"retry later","spentTimeMills":15}`

func TestConsumeMessageDirectlyResult(t *testing.T) {
	r, err := DecodeConsumeMessageDirectlyResult([]byte(goDirectResult))
	require.NoError(t, err)
	require.Equal(t, ConsumeMessageDirectlyResult{AutoCommit: true, ConsumeResult: "CR_SUCCESS", SpentTimeMills: 2}, r)
	r, err = DecodeConsumeMessageDirectlyResult([]byte(javaDirectResult))
	require.NoError(t, err)
	require.Equal(t, ConsumeMessageDirectlyResult{AutoCommit: true, ConsumeResult: "CR_LATER", Remark: "retry later", SpentTimeMills: 15}, r)
	require.Equal(t, javaDirectResult, string(AppendConsumeMessageDirectlyResult(nil, r)))

	r, err = DecodeConsumeMessageDirectlyResult([]byte(`{"consumeResult":4,"order":true}`))
	require.NoError(t, err)
	require.Equal(t, "CR_THROW_EXCEPTION", r.ConsumeResult)
	require.True(t, r.Order)
	r, err = DecodeConsumeMessageDirectlyResult([]byte(`{"consumeResult":17}`))
	require.NoError(t, err)
	require.Equal(t, "17", r.ConsumeResult, "an ordinal outside CMResult shown as sent")

	for _, bad := range []string{"", "{", `{"consumeResult":true}`, `{"spentTimeMills":"x"}`, `[]`} {
		_, err := DecodeConsumeMessageDirectlyResult([]byte(bad))
		require.ErrorIs(t, err, ErrSyntax, bad)
	}
}

func FuzzConsumeMessageDirectlyResult(f *testing.F) {
	f.Add([]byte(goDirectResult))
	f.Add([]byte(javaDirectResult))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeConsumeMessageDirectlyResult(b)
		if err != nil {
			return
		}
		// Encoding what was decoded decodes again, and stays put from then on (invalid UTF-8
		// becomes U+FFFD on the first trip).
		back, err := DecodeConsumeMessageDirectlyResult(AppendConsumeMessageDirectlyResult(nil, r))
		require.NoError(t, err)
		again, err := DecodeConsumeMessageDirectlyResult(AppendConsumeMessageDirectlyResult(nil, back))
		require.NoError(t, err)
		require.Equal(t, back, again)
	})
}
