package txn

import (
	"net/netip"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/stretchr/testify/require"
)

// FuzzHalfRecord: half records come from disk (and from a master's replicated log); whatever
// properties they hold, reading, restoring, copying and encoding them for a check-back must
// fail cleanly or produce records that decode to what was meant.
func FuzzHalfRecord(f *testing.F) {
	f.Add("REAL_TOPIC\x01T\x02REAL_QID\x011\x02PGROUP\x01pg\x02UNIQ_KEY\x01u\x02", []byte("body"), int64(3))
	f.Add("REAL_TOPIC\x01\x02REAL_QID\x01-1\x02", []byte{}, int64(0))
	f.Add("TRANSACTION_CHECK_TIMES\x0199999999999\x02CHECK_IMMUNITY_TIME_IN_SECONDS\x019223372036854775807\x02", []byte("x"), int64(1))
	f.Fuzz(func(t *testing.T, props string, body []byte, qoff int64) {
		if len(props) > commitlog.MaxPropertiesLength {
			return
		}
		rec := &commitlog.Record{Topic: HalfTopic, QueueOffset: qoff, PhysicalOffset: 100, Body: body, Properties: props,
			BornHost: netip.MustParseAddrPort("10.0.0.1:1"), StoreHost: netip.MustParseAddrPort("10.0.0.2:2")}
		h := HalfOf(rec)
		require.GreaterOrEqual(t, h.CheckTimes, 0)
		require.GreaterOrEqual(t, int64(h.Immunity), int64(0))
		if m, err := Restore(rec); err == nil {
			require.NotEqual(t, HalfTopic, m.Topic)
			require.GreaterOrEqual(t, m.QueueID, int32(0))
		}
		if cp, err := CheckCopy(rec); err == nil {
			require.Equal(t, HalfTopic, cp.Topic)
		}
		if b, err := CheckBody(nil, rec); err == nil && len(commitlog.ParseProperties(props)[PropRealTopic]) <= commitlog.MaxTopicLength {
			back, n, err := commitlog.DecodeRecord(b)
			require.NoError(t, err)
			require.Equal(t, len(b), n)
			require.Equal(t, string(body), string(back.Body))
		}
		_ = Discarded(rec)
	})
}
