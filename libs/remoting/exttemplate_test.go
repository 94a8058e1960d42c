package remoting

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kvAppender writes fixed fields, through a template or one String call each, around one
// field of its own.
type kvAppender struct {
	before, after []string
	tb, ta        *ExtTemplate
}

func (a kvAppender) AppendExt(w ExtWriter) ExtWriter {
	if a.tb != nil {
		w.Template(a.tb)
	} else {
		for i := 0; i+1 < len(a.before); i += 2 {
			w.String(a.before[i], a.before[i+1])
		}
	}
	w.Int("n", 42)
	if a.ta != nil {
		w.Template(a.ta)
	} else {
		for i := 0; i+1 < len(a.after); i += 2 {
			w.String(a.after[i], a.after[i+1])
		}
	}
	return w
}

func checkExtTemplate(t *testing.T, ext map[string]string, before, after []string) {
	t.Helper()
	tb, err := NewExtTemplate(before...)
	require.NoError(t, err)
	ta, err := NewExtTemplate(after...)
	require.NoError(t, err)
	plain := &Command{Code: 10, ExtFields: ext, ExtAppend: kvAppender{before: before, after: after}}
	templ := &Command{Code: 10, ExtFields: ext, ExtAppend: kvAppender{tb: tb, ta: ta}}
	require.Equal(t, AppendFrame(nil, plain), AppendFrame(nil, templ))
	wantBin, errW := AppendBinaryFrame(nil, plain)
	gotBin, errG := AppendBinaryFrame(nil, templ)
	require.Equal(t, errW, errG)
	require.Equal(t, wantBin, gotBin)
}

// TestExtTemplate: template fields encode as their String calls would, first, between and
// after other fields, in both header forms; bad templates are refused.
func TestExtTemplate(t *testing.T) {
	checkExtTemplate(t, nil, []string{"batch", "false"}, []string{"topic", "T\"1\"", "unitMode", "false"})
	checkExtTemplate(t, map[string]string{"a": "1"}, nil, []string{"b", "\x01\x02"})
	checkExtTemplate(t, nil, nil, nil)
	_, err := NewExtTemplate("odd")
	require.Error(t, err)
	_, err = NewExtTemplate(strings.Repeat("k", 1<<15), "v")
	require.ErrorIs(t, err, ErrHeaderTooLarge)
}

// FuzzExtTemplate: any fields, any split, the same bytes as String calls.
func FuzzExtTemplate(f *testing.F) {
	f.Add("batch=false;bname=b", "topic=T;x=\xff")
	f.Add("", "=;=")
	f.Fuzz(func(t *testing.T, before, after string) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			var kv []string
			for _, p := range strings.Split(s, ";") {
				k, v, _ := strings.Cut(p, "=")
				kv = append(kv, k, v)
			}
			return kv
		}
		checkExtTemplate(t, nil, split(before), split(after))
	})
}
