package remoting

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pairAppender writes its fields in sorted key order; values that are decimal integers of
// int64 go through Int, the rest through String.
type pairAppender map[string]string

func (p pairAppender) AppendExt(w ExtWriter) ExtWriter {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := p[k]
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && strconv.FormatInt(n, 10) == v {
			w.Int(k, n)
			continue
		}
		if v == "true" || v == "false" {
			w.Bool(k, v == "true")
			continue
		}
		w.String(k, v)
	}
	return w
}

// checkExtAppend encodes the fields once as a map and once through an appender (and once
// split between both) and requires the same header, in JSON and in binary.
func checkExtAppend(t *testing.T, code int32, remark string, ext map[string]string) {
	byMap := &Command{Code: code, Language: LanguageGo, Version: 1, Opaque: 9, Flag: FlagResponse, Remark: remark, ExtFields: ext}
	byApp := *byMap
	byApp.ExtFields = nil
	byApp.ExtAppend = pairAppender(ext)
	want, err := EncodeFrame(nil, byMap)
	if err != nil {
		return
	}
	got, err := EncodeFrame(nil, &byApp)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	wantBin, errMap := AppendBinaryFrame(nil, byMap)
	gotBin, errApp := AppendBinaryFrame(nil, &byApp)
	require.Equal(t, errMap == nil, errApp == nil)
	require.Equal(t, wantBin, gotBin)

	// Split: the map's keys first, then the appender's; the decoded fields are the union.
	first, second := map[string]string{}, pairAppender{}
	for k, v := range ext {
		if len(k)%2 == 0 {
			first[k] = v
		} else {
			second[k] = v
		}
	}
	split := *byMap
	split.ExtFields, split.ExtAppend = first, second
	frame, err := EncodeFrame(nil, &split)
	require.NoError(t, err)
	dec, err := DecodeFrame(frame[4:])
	require.NoError(t, err)
	ref, err := DecodeFrame(want[4:])
	require.NoError(t, err)
	require.Equal(t, ref.ExtFields, dec.ExtFields)
}

func TestExtAppend(t *testing.T) {
	checkExtAppend(t, Success, "", map[string]string{
		"msgId": "7F00000100002A9F0000000000000000", "queueId": "3", "queueOffset": "-12", "MSG_REGION": "DefaultRegion",
		"TRACE_ON": "true", "stored": "true", "replicas": "2", "flushed": "false", "transactionId": "U\x01\"\\",
	})
	checkExtAppend(t, SystemError, "remark", map[string]string{})
	var w ExtWriter
	require.Zero(t, testing.AllocsPerRun(100, func() {
		w = ExtWriter{dst: w.dst[:0]}
		w.Int("queueOffset", 1234567)
		w.String("msgId", "7F00000100002A9F0000000000000000")
		w.Bool("stored", true)
	}), "an appender writes without allocating once the buffer has grown")
	frame := make([]byte, 0, 1024)
	resp := &Command{Code: Success, Flag: FlagResponse, ExtAppend: fixedAppender{}}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		frame = AppendFrame(frame[:0], resp)
	}), "a frame with an appender encodes without allocating")
}

type fixedAppender struct{}

func (fixedAppender) AppendExt(w ExtWriter) ExtWriter {
	w.Int("queueOffset", 1234567)
	w.String("msgId", "7F00000100002A9F0000000000000000")
	return w
}

// FuzzExtAppend: fields written by an appender encode exactly as the same fields in ExtFields.
func FuzzExtAppend(f *testing.F) {
	f.Add(int32(0), "", "msgId=AB;queueId=1;queueOffset=99;TRACE_ON=true")
	f.Add(int32(17), "bad\x00", "a=-9223372036854775808;b=\xff;c=;=empty")
	f.Fuzz(func(t *testing.T, code int32, remark, fields string) {
		ext := map[string]string{}
		for _, kv := range strings.Split(fields, ";") {
			k, v, _ := strings.Cut(kv, "=")
			ext[k] = v
		}
		if code < -1<<15 || code >= 1<<15 {
			code %= 1 << 15
		}
		// Keys that JSON encoding changes (invalid UTF-8) cannot round-trip by name.
		for k := range ext {
			if strings.ToValidUTF8(k, "\uFFFD") != k {
				return
			}
		}
		checkExtAppend(t, code, remark, ext)
	})
}

// TestReleaseExt: a released map comes back empty for the next decoded command, and the
// strings the first command handed out stay as they were.
func TestReleaseExt(t *testing.T) {
	encode := func(ext map[string]string) []byte {
		frame, err := EncodeFrame(nil, NewRequest(SendMessageV2, ext, []byte("body")))
		require.NoError(t, err)
		return frame[4:]
	}
	first, err := DecodeFrame(encode(map[string]string{"a": "pg", "b": "TopicA", "i": "TAGS\u0001x\u0002"}))
	require.NoError(t, err)
	topic := first.ExtFields["b"]
	first.ReleaseExt()
	require.Nil(t, first.ExtFields)
	for i := 0; i < 3; i++ {
		next, err := DecodeFrame(encode(map[string]string{"b": "TopicB"}))
		require.NoError(t, err)
		require.Equal(t, map[string]string{"b": "TopicB"}, next.ExtFields)
		next.ReleaseExt()
	}
	require.Equal(t, "TopicA", topic)
	var nothing Command
	nothing.ReleaseExt() // no map: nothing to do
	big := make(map[string]string, maxPooledExt+1)
	for i := 0; i <= maxPooledExt; i++ {
		big[strconv.Itoa(i)] = "v"
	}
	c := &Command{ExtFields: big}
	c.ReleaseExt()
	require.Len(t, big, maxPooledExt+1, "a map over the pooled size is left alone")
}

func TestCommandStringShowsAppendedFields(t *testing.T) {
	c := &Command{Code: Success, Flag: FlagResponse, ExtAppend: fixedAppender{}}
	require.Contains(t, c.String(), `ext=map[]+{"queueOffset":"1234567","msgId":"7F00000100002A9F0000000000000000"}`)
}
