package remoting

import (
	"context"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
)

// collectExt is an ExtDecoder keeping what it is fed (the last value of a repeated key, as a
// map would).
type collectExt map[string]string

func (m collectExt) DecodeExt(k, v []byte) { m[string(k)] = string(v) }

// checkResponseExt: when the typed path takes frame, it decodes the fields DecodeFrame does
// and its walk feeds exactly the map's fields; extMap builds that map too.
func checkResponseExt(t *testing.T, frame []byte) {
	t.Helper()
	raw := decodeResponseRaw(frame)
	if raw == nil {
		return
	}
	want, err := DecodeFrame(frame)
	require.NoError(t, err, "typed path took a frame DecodeFrame refuses")
	require.Equal(t, []any{want.Code, want.Language, want.Version, want.Opaque, want.Flag, want.Remark, want.Body},
		[]any{raw.Code, raw.Language, raw.Version, raw.Opaque, raw.Flag, raw.Remark, raw.Body})
	got := collectExt{}
	cp := *raw
	cp.decodeExt(got)
	require.Nil(t, cp.ExtFields)
	require.Equal(t, want.ExtFields, map[string]string(got))
	raw.extMap()
	require.Nil(t, raw.rawExt)
	require.Equal(t, want.ExtFields, raw.ExtFields)

	// In place (InvokeAsync), the fields the check met reach the decoder without a second walk.
	var in Command
	var spans extSpans
	require.True(t, decodeResponseRawInto(&in, frame, &spans), "in place refused what the copy took")
	require.Equal(t, want.Body, in.Body)
	fromSpans := collectExt{}
	if spans.over {
		in.decodeExt(fromSpans)
	} else {
		spans.feed(fromSpans)
	}
	require.Equal(t, want.ExtFields, map[string]string(fromSpans))

	// Detached for a caller that keeps it: what decodeResponseRaw gives, sharing nothing with
	// the frame.
	var again extSpans
	read := append([]byte(nil), frame...) // the connection's read buffer
	require.True(t, decodeResponseRawInto(&in, read, &again))
	kept := in.detach(read, &again)
	for i := range read {
		read[i] = 'x' // the next frame arrives
	}
	require.Equal(t, []any{want.Code, want.Language, want.Version, want.Opaque, want.Flag, want.Remark, want.Body},
		[]any{kept.Code, kept.Language, kept.Version, kept.Opaque, kept.Flag, kept.Remark, kept.Body})
	kept.extMap()
	require.Equal(t, want.ExtFields, kept.ExtFields)
}

// TestResponseExtRoundTrip: answers encoded from a map, through ExtAppend and by hand (nulls,
// escapes, spaces, unknown keys) decode on the typed path to the map's fields.
func TestResponseExtRoundTrip(t *testing.T) {
	resp := NewResponse(&Command{Opaque: 77}, Success, "")
	resp.ExtFields = map[string]string{"msgId": "7F0000010000", "queueId": "3", "queueOffset": "12345", "p": "a\u0001b\u0002\"q\""}
	resp.Body = []byte("body")
	frame := AppendFrame(nil, resp)[4:]
	require.NotNil(t, decodeResponseRaw(frame))
	checkResponseExt(t, frame)

	typed := NewResponse(&Command{Opaque: 78}, FlushSlaveTimeout, "slave \"late\"")
	typed.ExtFields = nil
	typed.ExtAppend = testAppender{}
	frame = AppendFrame(nil, typed)[4:]
	require.NotNil(t, decodeResponseRaw(frame))
	checkResponseExt(t, frame)

	for _, h := range []string{
		`{"code":0,"extFields":{"a":null,"b":"x"},"flag":1,"language":"JAVA","opaque":5,"serializeTypeCurrentRPC":"JSON","version":453}`,
		` { "code" : 0 , "extFields" : { } , "opaque" : 6 , "flag" : 1 , "remark" : null } `,
		`{"code":0,"opaque":7,"flag":1}`,
		`{"code":0,"opaque":7,"flag":1,"extFields":{"a":"1"},"extFields":{"b":"2"}}`,
		`{"code":0,"opaque":7,"flag":1,"extFields":{"a":1}}`,
		`{"code":"0","opaque":7,"flag":1}`,
	} {
		frame := appendRawHeaderFrame(nil, SerializeJSON, []byte(h), nil)
		checkResponseExt(t, frame)
	}
	// Refused shapes fall back to the map decode.
	require.Nil(t, decodeResponseRaw(appendRawHeaderFrame(nil, SerializeJSON, []byte(`{"code":0,"extFields":{"a":"1"},"extFields":{"b":"2"}}`), nil)))
	bin, err := AppendBinaryFrame(nil, resp)
	require.NoError(t, err)
	require.Nil(t, decodeResponseRaw(bin[4:]))
}

type testAppender struct{}

func (testAppender) AppendExt(w ExtWriter) ExtWriter {
	w.String("msgId", "AB")
	w.Int("queueOffset", -9)
	return w
}

// appendRawHeaderFrame frames header bytes as they are (no length prefix).
func appendRawHeaderFrame(dst []byte, typ byte, header, body []byte) []byte {
	dst = append(dst, typ, byte(len(header)>>16), byte(len(header)>>8), byte(len(header)))
	dst = append(dst, header...)
	return append(dst, body...)
}

// FuzzResponseExt: on any frame the typed path takes, it agrees with DecodeFrame.
func FuzzResponseExt(f *testing.F) {
	resp := NewResponse(&Command{Opaque: 1}, Success, "r")
	resp.ExtFields = map[string]string{"msgId": "AB", "queueOffset": "1"}
	f.Add(AppendFrame(nil, resp)[4:])
	f.Add(appendRawHeaderFrame(nil, SerializeJSON, []byte(`{"code":0,"extFields":{"a":null,"\u0041":"\u00e9"},"flag":1}`), []byte("b")))
	f.Add(appendRawHeaderFrame(nil, SerializeJSON, []byte(`{"extFields":{"a":"1"},"extFields":null}`), nil))
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkResponseExt(t, frame)
	})
}

// TestInvokeExt: a typed call feeds the answer's fields to its decoder (ExtFields nil) and
// a plain call on the same connection still gets its map; both see the same fields.
func TestInvokeExt(t *testing.T) {
	s, _ := startServer(t, nil, func(s *Server) {
		s.HandleFunc(SendMessage, func(w ResponseWriter, req *Command) {
			resp := NewResponse(req, Success, "")
			resp.ExtFields = map[string]string{"msgId": "ID-" + req.Ext("n"), "queueOffset": req.Ext("n")}
			resp.Body = []byte(req.Ext("n"))
			_ = w.Write(resp)
		})
	})
	addr := s.Addr().String()
	cl := newTestClient(t, nil)
	for i, n := range []string{"1", "22", "333"} {
		req := NewRequest(SendMessage, map[string]string{"n": n}, nil)
		got := collectExt{}
		resp, err := cl.InvokeExt(context.Background(), addr, req, got)
		require.NoError(t, err)
		require.Nil(t, resp.ExtFields)
		require.Equal(t, map[string]string{"msgId": "ID-" + n, "queueOffset": n}, map[string]string(got), "call %d", i)
		require.Equal(t, n, string(resp.Body))
		plain, err := cl.Invoke(context.Background(), addr, req)
		require.NoError(t, err)
		require.True(t, maps.Equal(map[string]string(got), plain.ExtFields))
	}
}
