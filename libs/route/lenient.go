package route

import "fmt"

// Lenient rewrites fastjson output into standard JSON: object keys that are
// bare (unquoted) integers such as {0:12,-1:"x"} become quoted ("0", "-1").
// Everything else is copied byte for byte, so valid JSON comes back
// unchanged (and without a copy). It only tracks enough structure to know
// where keys start; full validation is left to encoding/json, except for
// unterminated strings and unbalanced brackets, which return ErrSyntax.
func Lenient(data []byte) ([]byte, error) {
	var (
		out       []byte // nil until the first rewrite
		stack     []byte // open '{' and '[' brackets
		expectKey bool   // the next token is an object key
		last      int    // data[last:i] is not yet copied into out
	)
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '"':
			j, ok := skipString(data, i)
			if !ok {
				return nil, fmt.Errorf("%w: unterminated string at byte %d", ErrSyntax, i)
			}
			i = j
			expectKey = false
		case c == '{':
			stack = append(stack, c)
			expectKey = true
			i++
		case c == '[':
			stack = append(stack, c)
			expectKey = false
			i++
		case c == '}' || c == ']':
			open := byte('{')
			if c == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return nil, fmt.Errorf("%w: unbalanced %q at byte %d", ErrSyntax, c, i)
			}
			stack = stack[:len(stack)-1]
			expectKey = false
			i++
		case c == ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
			i++
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case expectKey && (c == '-' || (c >= '0' && c <= '9')):
			j := i + 1
			for j < len(data) && data[j] >= '0' && data[j] <= '9' {
				j++
			}
			if out == nil {
				out = make([]byte, 0, len(data)+16)
			}
			out = append(out, data[last:i]...)
			out = append(out, '"')
			out = append(out, data[i:j]...)
			out = append(out, '"')
			last = j
			i = j
			expectKey = false
		default:
			expectKey = false
			i++
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("%w: %d unclosed brackets", ErrSyntax, len(stack))
	}
	if out == nil {
		return data, nil
	}
	return append(out, data[last:]...), nil
}

// skipString returns the index just past the string literal starting at
// data[i] (a '"'), and false when it is not terminated.
func skipString(data []byte, i int) (int, bool) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(data), false
}
