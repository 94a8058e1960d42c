package remoting

import (
	"fmt"
	"math"
)

// Fixed custom header fields encoded once
//
// An appender that writes the same fields into every frame (a producer's group, topic and
// flags on every send) escapes and copies each key and value per frame. An ExtTemplate holds
// such a run of fields already encoded, in the JSON and in the binary header form, so
// ExtWriter.Template writes them with one copy: exactly the bytes the same String calls
// would write (FuzzExtTemplate).

// ExtTemplate is a run of fixed custom header fields, encoded for both header forms.
type ExtTemplate struct {
	json, bin []byte
	n         int
}

// NewExtTemplate encodes key, value pairs in the order given. It fails for an odd count and
// for a key the binary header cannot describe (ErrHeaderTooLarge).
func NewExtTemplate(kv ...string) (*ExtTemplate, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("remoting: ext template of %d strings is not key, value pairs", len(kv))
	}
	t := &ExtTemplate{n: len(kv) / 2}
	j := ExtWriter{}
	b := ExtWriter{binary: true}
	for i := 0; i < len(kv); i += 2 {
		if len(kv[i]) > math.MaxInt16 {
			return nil, fmt.Errorf("%w: ext key of %d bytes", ErrHeaderTooLarge, len(kv[i]))
		}
		j.String(kv[i], kv[i+1])
		b.String(kv[i], kv[i+1])
	}
	t.json, t.bin = j.dst, b.dst
	return t, nil
}

// Template writes t's fields.
func (w *ExtWriter) Template(t *ExtTemplate) {
	if t == nil || t.n == 0 {
		return
	}
	if w.binary {
		w.dst = append(w.dst, t.bin...)
	} else {
		if w.n > 0 {
			w.dst = append(w.dst, ',')
		}
		w.dst = append(w.dst, t.json...)
	}
	w.n += t.n
}
