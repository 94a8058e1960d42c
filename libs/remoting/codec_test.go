package remoting

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// frameBody strips the length prefix after checking it.
func frameBody(t testing.TB, frame []byte) []byte {
	t.Helper()
	require.GreaterOrEqual(t, len(frame), 8)
	require.Equal(t, uint32(len(frame)-4), binary.BigEndian.Uint32(frame))
	return frame[4:]
}

func sampleCommand() *Command {
	return &Command{
		Code:     SendMessage,
		Language: "GO",
		Version:  317,
		Opaque:   -123456,
		Flag:     FlagOneway,
		Remark:   "quote\" backslash\\ nl\n tab\t ctl\x01\x02 é 日本 😀",
		ExtFields: map[string]string{
			"properties": "TAGS\x01TagA\x02KEYS\x01k1 k2\x02",
			"topic":      "TopicTest",
			"empty":      "",
			"ünï":        "<&>",
		},
		Body: []byte("hello\x00body"),
	}
}

func TestJSONFrameRoundTrip(t *testing.T) {
	c := sampleCommand()
	frame := AppendFrame([]byte("prefix"), c)
	require.Equal(t, "prefix", string(frame[:6]))
	body := frameBody(t, frame[6:])
	require.Equal(t, SerializeJSON, body[0])
	got, err := DecodeFrame(body)
	require.NoError(t, err)
	require.Equal(t, c, got)

	// The header must be valid JSON that a standard decoder agrees with.
	hlen := int(binary.BigEndian.Uint32(body) & 0xFFFFFF)
	var std struct {
		Code      int32             `json:"code"`
		Remark    string            `json:"remark"`
		ExtFields map[string]string `json:"extFields"`
	}
	require.NoError(t, json.Unmarshal(body[4:4+hlen], &std))
	require.Equal(t, c.Remark, std.Remark)
	require.Equal(t, c.ExtFields, std.ExtFields)
}

func TestBinaryFrameRoundTrip(t *testing.T) {
	c := sampleCommand()
	frame, err := AppendBinaryFrame(nil, c)
	require.NoError(t, err)
	body := frameBody(t, frame)
	require.Equal(t, SerializeRocketMQ, body[0])
	got, err := DecodeFrame(body)
	require.NoError(t, err)
	require.Equal(t, c, got)

	// Fixed part of the header is 21 bytes: check a few fields in place.
	h := body[4:]
	require.Equal(t, uint16(SendMessage), binary.BigEndian.Uint16(h[0:]))
	require.Equal(t, byte(9), h[2]) // GO
	require.Equal(t, uint16(317), binary.BigEndian.Uint16(h[3:]))
	require.Equal(t, uint32(0xFFFE1DC0), binary.BigEndian.Uint32(h[5:])) // -123456
	require.Equal(t, uint32(FlagOneway), binary.BigEndian.Uint32(h[9:]))
	require.Equal(t, uint32(len(c.Remark)), binary.BigEndian.Uint32(h[13:]))

	// No ext, no remark, no body.
	empty := &Command{Code: 1, Language: "JAVA", ExtFields: map[string]string{}}
	frame, err = AppendBinaryFrame(nil, empty)
	require.NoError(t, err)
	require.Equal(t, 4+4+binaryFixedLen, len(frame))
	got, err = DecodeFrame(frame[4:])
	require.NoError(t, err)
	require.Equal(t, empty, got)
}

// The route query of Appendix A, byte for byte, plus its length prefix and header word.
func TestJSONFrameExactBytes(t *testing.T) {
	req := NewRequest(GetRouteInfoByTopic, map[string]string{"topic": "TopicTest"}, nil)
	req.Opaque = 1
	frame := AppendFrame(nil, req)
	header := `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`
	want := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)))
	want = binary.BigEndian.AppendUint32(want, uint32(len(header)))
	want = append(want, header...)
	require.Equal(t, want, frame)

	// A response with no ext fields still carries "extFields":{} and the response flag.
	resp := NewResponse(req, Success, "")
	frame = AppendFrame(nil, resp)
	require.Equal(t, `{"code":0,"language":"GO","version":409,"opaque":1,"flag":1,"remark":"","extFields":{}}`,
		string(frame[8:]))

	// Control characters of the properties string use \u00xx, as the Go client writes them.
	req = NewRequest(SendMessage, map[string]string{"properties": "TAGS\x01TagA\x02"}, []byte("hello-sync"))
	req.Opaque = 2
	frame = AppendFrame(nil, req)
	require.Contains(t, string(frame), `"extFields":{"properties":"TAGS\u0001TagA\u0002"}}hello-sync`)
}

// appendixASyncSend is the sync-send header captured from rocketmq-client-go (Appendix A).
const appendixASyncSend = `{"code":10,"language":"GO","version":317,"opaque":2,"flag":0,"remark":"","extFields":{"reconsumeTimes":"0","batch":"false","properties":"TAGS\u0001TagA\u0002KEYS\u0001k1 k2\u0002UNIQ_KEY\u0001C000020244FC0000000091c070600001\u0002","producerGroup":"pg","flag":"0","unitMode":"false","maxReconsumeTimes":"0","defaultTopic":"TBW102","defaultTopicQueueNums":"4","bname":"broker-a","topic":"TopicTest","queueId":"1","sysFlag":"0","bornTimestamp":"1795936508414"}}`

func rawJSONFrame(header string, body []byte) []byte {
	f := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	f = binary.BigEndian.AppendUint32(f, uint32(len(header)))
	f = append(f, header...)
	return append(f, body...)
}

func TestDecodeCapturedGoClientFrame(t *testing.T) {
	frame := rawJSONFrame(appendixASyncSend, []byte("hello-sync"))
	got, err := ReadFrame(bytes.NewReader(frame), nil, 16<<20)
	require.NoError(t, err)
	c, err := DecodeFrame(got)
	require.NoError(t, err)
	require.Equal(t, SendMessage, c.Code)
	require.Equal(t, "GO", c.Language)
	require.EqualValues(t, 317, c.Version)
	require.EqualValues(t, 2, c.Opaque)
	require.EqualValues(t, 0, c.Flag)
	require.False(t, c.IsResponse())
	require.False(t, c.IsOneway())
	require.Equal(t, "hello-sync", string(c.Body))
	require.Len(t, c.ExtFields, 14)
	require.Equal(t, "TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C000020244FC0000000091c070600001\x02", c.Ext("properties"))
	ts, err := c.ExtInt64("bornTimestamp")
	require.NoError(t, err)
	require.EqualValues(t, 1795936508414, ts)
	q, err := c.ExtInt32("queueId")
	require.NoError(t, err)
	require.EqualValues(t, 1, q)
	b, err := c.ExtBool("unitMode")
	require.NoError(t, err)
	require.False(t, b)
	_, err = c.ExtInt32("missing")
	require.ErrorIs(t, err, ErrExtMissing)
	_, err = c.ExtInt32("topic")
	require.ErrorIs(t, err, ErrExtInvalid)

	// Re-encoding and decoding again gives the same command.
	again, err := DecodeFrame(AppendFrame(nil, c)[4:])
	require.NoError(t, err)
	require.Equal(t, c, again)
}

func TestDecodeLenientJSON(t *testing.T) {
	// Java style: no remark, extra key, ext values of other JSON types, whitespace.
	h := ` { "code" : 0, "extFields": {"queueOffset": 12, "neg": -3, "f": 1.5, "ok": true, "no": false,` +
		` "gone": null, "nested": {"a": [1, "x"]}, "s": "a\/b\u00e9\ud83d\ude00"}, "flag": 1, "language": "JAVA",` +
		` "opaque": 7, "serializeTypeCurrentRPC": "JSON", "version": 479, "unknownObj": {"x": [null, true]} } `
	c, err := DecodeFrame(rawJSONFrame(h, nil)[4:])
	require.NoError(t, err)
	require.Equal(t, &Command{
		Code: 0, Language: "JAVA", Version: 479, Opaque: 7, Flag: 1,
		ExtFields: map[string]string{
			"queueOffset": "12", "neg": "-3", "f": "1.5", "ok": "true", "no": "false",
			"nested": `{"a": [1, "x"]}`, "s": "a/bé😀",
		},
	}, c)

	// Null remark/extFields, numeric language, quoted integer.
	c, err = DecodeFrame(rawJSONFrame(`{"code":"17","language":0,"remark":null,"extFields":null,"opaque":2147483647}`, []byte{1})[4:])
	require.NoError(t, err)
	require.Equal(t, &Command{Code: 17, Language: "JAVA", Opaque: 2147483647, ExtFields: map[string]string{}, Body: []byte{1}}, c)
}

func TestDecodeMalformed(t *testing.T) {
	cases := map[string][]byte{
		"short":           {0, 0},
		"header overruns": binary.BigEndian.AppendUint32(nil, 10),
		"unknown type":    append(binary.BigEndian.AppendUint32(nil, 2<<24|2), '{', '}'),
	}
	for name, hdr := range map[string]string{
		"not object":     `[1]`,
		"unterminated":   `{"code":1`,
		"bad key":        `{code:1}`,
		"code range":     `{"code":2147483648}`,
		"opaque range":   `{"opaque":4294967296}`,
		"fraction":       `{"code":1.5}`,
		"trailing":       `{"code":1} x`,
		"bad escape":     `{"remark":"\q"}`,
		"short unicode":  `{"remark":"\u12"}`,
		"deep":           `{"x":` + string(bytes.Repeat([]byte("["), 100)) + `}`,
		"bad ext":        `{"extFields":{"a":}}`,
		"ext not object": `{"extFields":"x"}`,
		"empty":          ``,
	} {
		cases["json "+name] = rawJSONFrame(hdr, nil)[4:]
	}
	bin := func(h []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(h))), h...)
	}
	fixed := make([]byte, binaryFixedLen)
	cases["binary short"] = bin(fixed[:20])
	negRemark := append([]byte(nil), fixed...)
	binary.BigEndian.PutUint32(negRemark[13:], 0xFFFFFFFF)
	cases["binary negative remark"] = bin(negRemark)
	longRemark := append([]byte(nil), fixed...)
	binary.BigEndian.PutUint32(longRemark[13:], 100)
	cases["binary remark overrun"] = bin(longRemark)
	badExt := append(append([]byte(nil), fixed[:17]...), 0, 0, 0, 3, 0, 5, 'a')
	cases["binary ext overrun"] = bin(badExt)
	negKey := append(append([]byte(nil), fixed[:17]...), 0, 0, 0, 2, 0xFF, 0xFF)
	cases["binary negative key"] = bin(negKey)
	for name, frame := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := DecodeFrame(frame)
			require.ErrorIs(t, err, ErrMalformed)
			require.Nil(t, c)
		})
	}
}

func TestReadFrame(t *testing.T) {
	frame := AppendFrame(nil, NewRequest(HeartBeat, nil, []byte("x")))
	two := append(append([]byte(nil), frame...), frame...)
	r := bytes.NewReader(two)
	buf := make([]byte, 0, 1024)
	for i := 0; i < 2; i++ {
		got, err := ReadFrame(r, buf, 1<<20)
		require.NoError(t, err)
		require.Equal(t, frame[4:], got)
	}
	_, err := ReadFrame(r, buf, 1<<20)
	require.ErrorIs(t, err, io.EOF)

	// Truncated inside the length, inside the frame.
	for _, n := range []int{2, 6, len(frame) - 1} {
		_, err = ReadFrame(bytes.NewReader(frame[:n]), nil, 1<<20)
		require.True(t, errors.Is(err, io.ErrUnexpectedEOF), "cut at %d: %v", n, err)
	}
	// Too large, too small, negative.
	_, err = ReadFrame(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 1<<20+1)), nil, 1<<20)
	require.ErrorIs(t, err, ErrFrameTooLarge)
	_, err = ReadFrame(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 3)), nil, 1<<20)
	require.ErrorIs(t, err, ErrMalformed)
	_, err = ReadFrame(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 0x80000000)), nil, 0)
	require.ErrorIs(t, err, ErrMalformed)
}

func TestRecoverOpaque(t *testing.T) {
	o, f, ok := recoverOpaque(rawJSONFrame(`{"code":10,"opaque": 77,"flag":1,"extFields":{"a":[}`, nil)[4:])
	require.True(t, ok)
	require.EqualValues(t, 77, o)
	require.EqualValues(t, 1, f)
	_, _, ok = recoverOpaque(rawJSONFrame(`{"code":10,"extFields":{"a":[}`, nil)[4:])
	require.False(t, ok)
	bin, err := AppendBinaryFrame(nil, &Command{Code: 1, Opaque: -5, Flag: 2})
	require.NoError(t, err)
	o, f, ok = recoverOpaque(bin[4:])
	require.True(t, ok)
	require.EqualValues(t, -5, o)
	require.EqualValues(t, 2, f)
}

func TestEncodeHeaderTooLarge(t *testing.T) {
	c := NewRequest(SendMessage, nil, nil)
	c.Remark = string(bytes.Repeat([]byte("a"), maxHeaderLen))
	_, err := EncodeFrame([]byte("keep"), c)
	require.ErrorIs(t, err, ErrHeaderTooLarge)
	require.Equal(t, "keep", string(AppendFrame([]byte("keep"), c)))
}

func TestInvalidUTF8BecomesReplacement(t *testing.T) {
	c := NewRequest(SendMessage, map[string]string{"k": "a\xffb"}, nil)
	got, err := DecodeFrame(AppendFrame(nil, c)[4:])
	require.NoError(t, err)
	require.Equal(t, "a\uFFFDb", got.Ext("k"))
}

func TestCodeNames(t *testing.T) {
	require.Equal(t, "GET_ROUTEINFO_BY_TOPIC", RequestName(GetRouteInfoByTopic))
	require.Equal(t, "REQUEST_9999", RequestName(9999))
	require.Equal(t, "SYSTEM_BUSY", ResponseName(SystemBusy))
	require.Equal(t, "INVALID_PARAMETER", ResponseName(29))
	require.Equal(t, "RESPONSE_-1", ResponseName(-1))
	require.Equal(t, "NODE_JS", LanguageName(13))
	require.Equal(t, "UNKNOWN", LanguageName(200))
	require.Equal(t, byte(0), LanguageCode("JAVA"))
	require.Equal(t, byte(7), LanguageCode("COBOL"))
}

// Java's code is an int: RocketMQ 5's POP codes (200050 and up) decode, and a server that does
// not serve them answers REQUEST_CODE_NOT_SUPPORTED rather than a malformed-header error.
func TestDecodeWideRequestCode(t *testing.T) {
	hdr := `{"code":200050,"opaque":7,"flag":0}`
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(hdr))), hdr...)
	c, err := DecodeFrame(frame)
	require.NoError(t, err)
	require.Equal(t, int32(200050), c.Code)
	require.Equal(t, "REQUEST_200050", RequestName(c.Code))
	_, err = AppendBinaryFrame(nil, c)
	require.ErrorIs(t, err, ErrHeaderTooLarge)
}
