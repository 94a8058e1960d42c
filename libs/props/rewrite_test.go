package props

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRewriteKeepsCommentsAndUnknownLines(t *testing.T) {
	src := "# broker-a, edited by hand\n" +
		"brokerName = broker-a\n" +
		"\n" +
		"! a Java-style comment\n" +
		"slaveReadEnable=false\n" +
		"someForeignKey: 12\n" +
		"namesrvAddr=127.0.0.1:9876;\\\n" +
		"  127.0.0.1:9877\n" +
		"slaveReadEnable false\r\n" +
		"lastLine=x"
	got := string(Rewrite([]byte(src), map[string]string{
		"slaveReadEnable":         "true",
		"namesrvAddr":             "127.0.0.1:9999",
		"storeReplyMessageEnable": "false",
		"aNewKey":                 "1",
	}))
	want := "# broker-a, edited by hand\n" +
		"brokerName = broker-a\n" +
		"\n" +
		"! a Java-style comment\n" +
		"slaveReadEnable=true\n" +
		"someForeignKey: 12\n" +
		"namesrvAddr=127.0.0.1:9999\n" +
		"slaveReadEnable=true\r\n" +
		"lastLine=x\n" +
		"aNewKey=1\n" +
		"storeReplyMessageEnable=false\n"
	require.Equal(t, want, got)

	// What Parse reads from the result is the old file with the updates applied.
	entries, err := Parse(strings.NewReader(got), "rewritten")
	require.NoError(t, err)
	m := map[string]string{}
	for _, e := range entries {
		m[e.Key] = e.Value
	}
	require.Equal(t, map[string]string{
		"brokerName": "broker-a", "slaveReadEnable": "true", "someForeignKey": "12",
		"namesrvAddr": "127.0.0.1:9999", "lastLine": "x", "aNewKey": "1", "storeReplyMessageEnable": "false",
	}, m)
}

func TestRewriteNothingToChange(t *testing.T) {
	src := []byte("a=1\n# c\nb=2\n")
	require.Equal(t, src, Rewrite(src, nil))
	require.Equal(t, []byte("k=v\n"), Rewrite(nil, map[string]string{"k": "v"}))
}

// FuzzRewrite: any input, no panic; the updated keys read back with their new values and
// every other key keeps its last value.
func FuzzRewrite(f *testing.F) {
	f.Add([]byte("a=1\nb=2\\\n 3\n# x\n"), "a", "9")
	f.Add([]byte("\\\n\\"), "b", "")
	f.Add([]byte("k\r\nk=\\\\\n"), "k", "v")
	f.Fuzz(func(t *testing.T, src []byte, key, val string) {
		// Keys are RocketMQ's (letters, digits, dots, dashes); values hold no line break and no
		// backslash (the broker refuses them) and no outer white space (Parse trims it).
		if key == "" || strings.Trim(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_") != "" ||
			strings.ContainsAny(val, "\r\n\\") || strings.TrimSpace(val) != val {
			return
		}
		before, err := Parse(bytes.NewReader(src), "src")
		if err != nil {
			return
		}
		// Parse forgives a key-less last line only at the very end of a file.
		if _, err := Parse(bytes.NewReader(append(append([]byte{}, src...), "\n\nzz=1\n"...)), "src+"); err != nil {
			return
		}
		out := Rewrite(src, map[string]string{key: val})
		after, err := Parse(bytes.NewReader(out), "out")
		require.NoError(t, err)
		last := func(es []Entry) map[string]string {
			m := map[string]string{}
			for _, e := range es {
				m[e.Key] = e.Value
			}
			return m
		}
		want := last(before)
		want[key] = val
		require.Equal(t, want, last(after))
	})
}
