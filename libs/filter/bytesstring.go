package filter

import "unsafe"

// bytesString views b as a string without copying. EvalRaw uses it for property values so
// that evaluating a stored message allocates nothing; the views live only in that call's
// slots, which are cleared before they could outlive it, and nothing writes to b meanwhile.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
