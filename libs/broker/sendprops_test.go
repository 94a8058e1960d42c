package broker

import (
	"cmp"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

func propsBroker(cluster string) *Broker {
	return &Broker{cfg: Config{BrokerClusterName: cluster}, clusterPair: clusterPairOf(cluster)}
}

// checkPlainAgrees compares the fast path with fixProperties on props: when the fast path
// takes a message, both store the same pairs and agree on WAIT and UNIQ_KEY; when it declines,
// nothing is claimed.
func checkPlainAgrees(t *testing.T, b *Broker, props string) bool {
	fast, ok := b.plainProperties(props)
	if !ok {
		return false
	}
	slow, pm, wait := b.fixProperties(props)
	require.Equal(t, slow, string(commitlog.AppendProperties(nil, commitlog.ParseProperties(fast.props))), "props %q", props)
	require.Equal(t, commitlog.ParseProperties(slow), commitlog.ParseProperties(fast.props), "props %q", props)
	require.Equal(t, wait, fast.wait, "props %q", props)
	require.Equal(t, pm[propUniqKey], fast.uniq, "props %q", props)
	for k := range pm {
		require.False(t, isSpecialProperty(k), "props %q took the fast path with %s", props, k)
	}
	return true
}

func TestPlainProperties(t *testing.T) {
	b := propsBroker("DefaultCluster")
	for _, tc := range []struct {
		props string
		plain bool
	}{
		{"", true},
		{props("TAGS", "a"), true},
		{props("UNIQ_KEY", "ID1", "TAGS", "a", "WAIT", "true"), true},
		{props("WAIT", "false", "KEYS", "k"), true},
		{props("CLUSTER", "Other", "TIMER_SOURCE", "1:2", "KEYS", "k"), true},
		{"TAGS\x01a", true},                      // the last pair without its separator
		{props("DELAY", "3"), false},             // delay level
		{props("TRAN_MSG", "true"), false},       // transaction half
		{props("TIMER_DELAY_SEC", "10"), false},  // timer
		{props("TAGS", "a", "TAGS", "b"), false}, // repeated name: the general path keeps the last
		{"TAGS\x01\x02", false},                  // empty value
		{"\x02TAGS\x01a\x02", false},             // empty pair
		{"TAGS", false},                          // no separator
	} {
		require.Equal(t, tc.plain, checkPlainAgrees(t, b, tc.props), "props %q", tc.props)
	}
	fast, ok := b.plainProperties(props("TAGS", "a", "WAIT", "false", "UNIQ_KEY", "U"))
	require.True(t, ok)
	require.Equal(t, props("TAGS", "a", "UNIQ_KEY", "U", "CLUSTER", "DefaultCluster"), fast.props, "pairs keep their order, CLUSTER last")
	require.False(t, fast.wait)
	require.Equal(t, "U", fast.uniq)
	empty, ok := b.plainProperties("")
	require.True(t, ok)
	require.Equal(t, props("CLUSTER", "DefaultCluster"), empty.props)
	require.True(t, empty.wait)
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = b.plainProperties("") }))
	tagged := props("UNIQ_KEY", "ID1", "TAGS", "a")
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _, _ = b.plainProperties(tagged) }), "one string: the stored properties")
}

// FuzzPlainProperties: the properties string comes from the network; the fast path must never
// panic and, whenever it takes a message, store what the general path stores.
func FuzzPlainProperties(f *testing.F) {
	f.Add("", "DefaultCluster")
	f.Add(props("UNIQ_KEY", "ID1", "TAGS", "a", "WAIT", "true"), "DefaultCluster")
	f.Add(props("CLUSTER", "x", "TIMER_SOURCE", "1:2"), "")
	f.Add("TAGS\x01a", "c")
	f.Add(props("DELAY", "3", "TAGS", "a"), "c")
	f.Add("a\x01b\x01c\x02\x02", "c")
	f.Fuzz(func(t *testing.T, p, cluster string) {
		if strings.ContainsAny(cluster, "\x01\x02") {
			return // not a cluster name (a separator inside it breaks either path's pair)
		}
		checkPlainAgrees(t, propsBroker(cluster), p)
	})
}

// FuzzSendHeaderV2: a SEND_MESSAGE_V2 header (short names) read in place must decode as the
// same header written with the long names (the reference: SEND_MESSAGE's decoding), field for
// field and error for error.
func FuzzSendHeaderV2(f *testing.F) {
	f.Add("pg", "T", "TBW102", "4", "0", "0", "1700000000000", "0", "TAGS\x01a\x02", "0", "false", "16", "false", "broker-a", "extra")
	f.Add("", "T", "", "", "-1", "x", "", "", "", "-3", "", " 7 ", "TRUE", "", "")
	f.Fuzz(func(t *testing.T, a, b, c, d, e, g, gg, h, i, j, k, l, m, n, other string) {
		vals := []string{a, b, c, d, e, g, gg, h, i, j, k, l, m, n}
		short := map[string]string{"other": other}
		long := map[string]string{"other": other}
		for x, v := range vals {
			if v == "" && x%3 == 0 {
				continue // absent, not empty
			}
			name := string(rune('a' + x))
			short[name] = v
			long[v2Names[name]] = v
		}
		got, gotErr := decodeSendHeader(&remoting.Command{Code: remoting.SendMessageV2, ExtFields: short})
		want, wantErr := decodeSendHeader(&remoting.Command{Code: remoting.SendMessage, ExtFields: long})
		require.Equal(t, wantErr == nil, gotErr == nil, "errors %v / %v", wantErr, gotErr)
		if wantErr != nil {
			require.Equal(t, wantErr.Error(), gotErr.Error())
			return
		}
		require.Equal(t, want, got)
	})
}

// TestSendAnswerBytes: a send's typed answer encodes to the bytes of the map-based response
// it replaces, for every combination of its optional fields.
func TestSendAnswerBytes(t *testing.T) {
	req := &remoting.Command{Code: remoting.SendMessageV2, Opaque: 42}
	for _, tx := range []string{"", "7F0000010001\x01\"x"} {
		for _, flush := range []int{0, 1, 2, 3} {
			a := newSendAnswer(req)
			a.msgID, a.queueID, a.queueOffset, a.txID = "7F00000100002A9F0000000000001234", 3, 1<<40, tx
			if flush == 3 { // the msgId written from the store's host and offset
				a.msgID, a.host, a.offset, a.offID = "", netip.MustParseAddrPort("127.0.0.1:10911"), 0x1234, true
				flush = 1
			}
			a.setOutcome(2, flush > 0, flush == 1)
			want := remoting.NewResponse(req, remoting.Success, "")
			want.Flag = remoting.FlagResponse
			for k, v := range map[string]string{
				"msgId": cmp.Or(a.msgID, commitlog.OffsetMsgID(a.host, a.offset)), "queueId": "3", "queueOffset": "1099511627776", "MSG_REGION": regionDefault,
				"TRACE_ON": "true", "stored": "true", "replicas": "2",
			} {
				want.ExtFields[k] = v
			}
			if tx != "" {
				want.ExtFields["transactionId"] = tx
			}
			if flush > 0 {
				want.ExtFields["flushed"] = strconv.FormatBool(flush == 1)
			}
			wantFrame, err := remoting.EncodeFrame(nil, want)
			require.NoError(t, err)
			gotFrame, err := remoting.EncodeFrame(nil, a.command())
			require.NoError(t, err)
			require.Equal(t, string(wantFrame), string(gotFrame))
			wantBin, err := remoting.AppendBinaryFrame(nil, want)
			require.NoError(t, err)
			gotBin, err := remoting.AppendBinaryFrame(nil, a.command())
			require.NoError(t, err)
			require.Equal(t, wantBin, gotBin)
		}
	}
}

// TestPullAnswerBytes: a pull's typed answer encodes to the bytes of the map-based response.
func TestPullAnswerBytes(t *testing.T) {
	req := &remoting.Command{Code: remoting.PullMessage, Opaque: 9}
	for _, code := range []int32{remoting.Success, remoting.PullNotFound, remoting.PullOffsetMoved} {
		a := newPullAnswer(req, code, "NO_MATCHED_MESSAGE")
		a.next, a.min, a.max, a.suggest = 1234, -1, 1<<50, 1
		want := remoting.NewResponse(req, code, "NO_MATCHED_MESSAGE")
		want.Flag = remoting.FlagResponse
		want.ExtFields["nextBeginOffset"] = "1234"
		want.ExtFields["minOffset"] = "-1"
		want.ExtFields["maxOffset"] = strconv.FormatInt(1<<50, 10)
		want.ExtFields["suggestWhichBrokerId"] = "1"
		wantFrame, err := remoting.EncodeFrame(nil, want)
		require.NoError(t, err)
		gotFrame, err := remoting.EncodeFrame(nil, a.command())
		require.NoError(t, err)
		require.Equal(t, string(wantFrame), string(gotFrame))
	}
}
