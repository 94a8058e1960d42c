package route

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLenientQuotesBareIntegerKeys(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{0:12,1:15}`, `{"0":12,"1":15}`},
		{`{"offsetTable":{"T@g":{0:12,-1:3}}}`, `{"offsetTable":{"T@g":{"0":12,"-1":3}}}`},
		{`{ 0 : "a:1" , 10:"b,2"}`, `{ "0" : "a:1" , "10":"b,2"}`},
		{`[{1:2},{3:[4,5,{6:7}]}]`, `[{"1":2},{"3":[4,5,{"6":7}]}]`},
		// Digits inside strings and values are left alone.
		{`{"k":"{0:1}","n":[0,1],"m":{"2":3}}`, `{"k":"{0:1}","n":[0,1],"m":{"2":3}}`},
		{`{"esc\"{0:1}":{5:"x\\"}}`, `{"esc\"{0:1}":{"5":"x\\"}}`},
		{`{}`, `{}`},
		{``, ``},
	}
	for _, c := range cases {
		got, err := Lenient([]byte(c.in))
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, string(got), c.in)
	}
}

func TestLenientValidJSONUnchanged(t *testing.T) {
	in := []byte(`{"a":[1,2,{"b":null,"c":"d"}],"e":-1.5e3}`)
	out, err := Lenient(in)
	require.NoError(t, err)
	require.Equal(t, string(in), string(out))
	require.Equal(t, &in[0], &out[0], "valid JSON is returned without a copy")
}

func TestLenientErrors(t *testing.T) {
	for _, in := range []string{`{"a":"x`, `{0:1`, `[}`, `]`, `{"a":[1}`} {
		_, err := Lenient([]byte(in))
		require.ErrorIs(t, err, ErrSyntax, in)
	}
}

func FuzzLenient(f *testing.F) {
	for _, s := range []string{
		`{0:12,1:15}`, `{"offsetTable":{"T@g":{0:12}}}`, `{"a":"\"{1:2}"}`, `[1,{2:[]}]`,
		`{-:1}`, `{"a":1,}`, `{0:"127.0.0.1:10911",1:"x"}`, `"\`, `{{{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Lenient(in)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if json.Valid(in) && string(in) != string(out) {
			t.Fatalf("valid JSON changed: %q -> %q", in, out)
		}
		// Idempotent: a second pass changes nothing.
		again, err := Lenient(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("second pass changed %q -> %q (%v)", out, again, err)
		}
	})
}
