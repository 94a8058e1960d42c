package remoting

import (
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Headers as peers send them; the fast path must take every one of them.
var fastHeaders = map[string]string{
	"go SEND_MESSAGE": appendixASyncSend,
	"go SEND_MESSAGE_V2": `{"code":310,"language":"GO","version":317,"opaque":9,"flag":0,"remark":"","extFields":` +
		`{"a":"pg","b":"TopicTest","c":"TBW102","d":"4","e":"1","f":"0","g":"1795936508414","h":"0",` +
		`"i":"TAGS\u0001TagA\u0002UNIQ_KEY\u0001C0A80001\u0002","j":"0","k":"false","l":"0","m":"false","n":"broker-a"}}`,
	"go PULL_MESSAGE": `{"code":11,"language":"GO","version":317,"opaque":12,"flag":0,"remark":"","extFields":` +
		`{"consumerGroup":"cg","topic":"TopicTest","queueId":"0","queueOffset":"42","maxMsgNums":"32","sysFlag":"2",` +
		`"commitOffset":"0","suspendTimeoutMillis":"20000","subscription":"*","subVersion":"0","expressionType":"TAG","bname":"broker-a"}}`,
	"java SEND_MESSAGE_V2": `{"code":310,"extFields":{"a":"pg","b":"T","c":"TBW102","d":"4","e":"0","f":"0","g":"1",` +
		`"h":"0","i":"WAIT\u0001true\u0002","j":"0","k":"false","m":"false","n":"broker-a"},"flag":0,"language":"JAVA",` +
		`"opaque":5,"serializeTypeCurrentRPC":"JSON","version":453}`,
	"response": `{"code":0,"language":"GO","version":453,"opaque":5,"flag":1,"remark":"","extFields":{"msgId":"7F00000100002A9F0000000000000000","queueId":"0","queueOffset":"0"}}`,
	"spaces, nulls, escapes": " {\n\t\"opaque\" : -3 , \"remark\" : null, \"language\":\"J\\\"AVA\", \"x\":true, \"y\":1.5e3," +
		" \"extFields\" : { \"k\\u0041\" : \"v\\ud83d\\ude00\", \"z\" : null } , \"code\":0 } ",
	"empty": `{}`,
}

func TestFastJSONHeaderAgreesWithGeneric(t *testing.T) {
	for name, h := range fastHeaders {
		t.Run(name, func(t *testing.T) {
			fast, ok := decodeJSONHeaderFast([]byte(h))
			require.True(t, ok, "fast path gave up")
			gen, err := decodeJSONHeader([]byte(h))
			require.NoError(t, err)
			requireSameHeader(t, gen, fast)
		})
	}
	c, ok := decodeJSONHeaderFast([]byte(fastHeaders["spaces, nulls, escapes"]))
	require.True(t, ok)
	require.Equal(t, map[string]string{"kA": "v\U0001F600"}, c.ExtFields)
	require.Equal(t, `J"AVA`, c.Language)
	require.Equal(t, int32(-3), c.Opaque)
}

// Shapes the fast path leaves to the generic decoder (which accepts them).
func TestFastJSONHeaderGivesUp(t *testing.T) {
	for _, h := range []string{
		`{"code":"10"}`,                    // quoted integer
		`{"code":1.0}`,                     // fractional notation
		`{"code":1e1}`,                     // exponent
		`{"language":3}`,                   // language ordinal
		`{"extFields":{"n":12}}`,           // number inside extFields
		`{"extFields":{"o":{"a":[1]}}}`,    // nested value
		`{"x":[1,2]}`,                      // nested unknown key
		`{"c\u006fde":10}`,                 // escaped top-level key
		`{"code":12345678901234567890000}`, // too long: the generic decoder refuses it
	} {
		_, ok := decodeJSONHeaderFast([]byte(h))
		require.False(t, ok, h)
	}
}

// A long header's strings are not substrings of one shared copy.
func TestFastJSONHeaderLargeHeaderCopies(t *testing.T) {
	big := strings.Repeat("x", sharedHeaderMax)
	h := `{"code":10,"extFields":{"topic":"T","big":"` + big + `"}}`
	c, ok := decodeJSONHeaderFast([]byte(h))
	require.True(t, ok)
	require.Equal(t, "T", c.ExtFields["topic"])
	require.Equal(t, big, c.ExtFields["big"])
}

func requireSameHeader(t *testing.T, want, got *Command) {
	t.Helper()
	requireSameTop(t, want, got)
	require.True(t, maps.Equal(want.ExtFields, got.ExtFields), "ext fields: %v vs %v", want.ExtFields, got.ExtFields)
	require.NotNil(t, got.ExtFields)
}

// requireSameTop checks the top-level fields of two decodes of a header.
func requireSameTop(t testing.TB, want, got *Command) {
	t.Helper()
	require.Equal(t, want.Code, got.Code, "code")
	require.Equal(t, want.Language, got.Language, "language")
	require.Equal(t, want.Version, got.Version, "version")
	require.Equal(t, want.Opaque, got.Opaque, "opaque")
	require.Equal(t, want.Flag, got.Flag, "flag")
	require.Equal(t, want.Remark, got.Remark, "remark")
}

// FuzzJSONHeaderFast is the differential target: on every input the fast path accepts, the
// generic decoder must accept it too and produce the same command.
func FuzzJSONHeaderFast(f *testing.F) {
	for _, h := range fastHeaders {
		f.Add([]byte(h))
	}
	for _, s := range fuzzSeeds() {
		if len(s) > 4 {
			f.Add(s[4:])
		}
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		fast, ok := decodeJSONHeaderFast(h)
		if !ok {
			return
		}
		gen, err := decodeJSONHeader(h)
		if err != nil {
			t.Fatalf("fast path accepted what the generic decoder refuses (%v): %q", err, h)
		}
		requireSameHeader(t, gen, fast)
		requirePairsAgree(t, h, gen)
	})
}

// requirePairsAgree decodes h with its ext fields into pairs, its strings from an arena whose
// chunk is almost full (the header's copy goes into the rest of it or into a new chunk), and
// checks that every lookup and the materialized map agree with the generic decode gen.
func requirePairsAgree(t *testing.T, h []byte, gen *Command) {
	t.Helper()
	c := &Command{}
	arena := stringArena{buf: make([]byte, max(headerArenaChunk-len(h)/2, 0), headerArenaChunk)}
	require.True(t, decodeJSONHeaderFastInto(c, h, func(int32) bool { return true }, &arena), "pairs decode refused what the map decode took")
	require.Equal(t, gen.Code, c.Code)
	for k, v := range gen.ExtFields {
		got, ok := c.ExtLookup(k)
		require.True(t, ok, "key %q", k)
		require.Equal(t, v, got, "key %q", k)
		require.Equal(t, v, c.Ext(k))
	}
	_, ok := c.ExtLookup("\x00absent")
	require.False(t, ok)
	c.MaterializeExt()
	require.True(t, maps.Equal(gen.ExtFields, c.ExtFields), "materialized: %v vs %v", gen.ExtFields, c.ExtFields)
	c.ReleaseExt()
}

// A request whose code comes before its extFields (as RocketMQ clients write it) and whose
// code pairsFor names gets pairs, not a map; one whose extFields come first gets the map; a
// repeated key gives its last value, as the map decode does.
func TestJSONHeaderPairs(t *testing.T) {
	yes := func(code int32) bool { return code == 310 }
	c := &Command{}
	h := `{"code":310,"extFields":{"a":"PG","b":"T","b":"T2","e":"3"},"flag":0,"language":"GO","opaque":7,"version":0}`
	require.True(t, decodeJSONHeaderFastInto(c, []byte(h), yes, nil))
	require.Nil(t, c.ExtFields, "no map for a pairs request")
	require.Equal(t, "T2", c.Ext("b"))
	require.Equal(t, "PG", c.Ext("a"))
	v, err := c.ExtInt32("e")
	require.NoError(t, err)
	require.EqualValues(t, 3, v)
	_, ok := c.ExtLookup("z")
	require.False(t, ok)
	gen, err := decodeJSONHeader([]byte(h))
	require.NoError(t, err)
	requirePairsAgree(t, []byte(h), gen)

	late := &Command{}
	h2 := `{"extFields":{"a":"PG"},"code":310,"opaque":1}`
	require.True(t, decodeJSONHeaderFastInto(late, []byte(h2), yes, nil))
	require.Equal(t, map[string]string{"a": "PG"}, late.ExtFields, "code after extFields: the map")

	other := &Command{}
	require.True(t, decodeJSONHeaderFastInto(other, []byte(`{"code":11,"extFields":{"a":"PG"}}`), yes, nil))
	require.Equal(t, map[string]string{"a": "PG"}, other.ExtFields, "a code pairsFor does not name: the map")
}
