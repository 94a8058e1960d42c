package props

import (
	"sort"
	"strings"
)

// Rewrite returns the properties file src with the keys of set given new values, everything
// else kept byte for byte (comments, blank lines, unknown keys, their order):
//
//	# broker-a                      # broker-a
//	slaveReadEnable=false    ==>    slaveReadEnable=true      (every line of the key, continuation
//	brokerName=broker-a             brokerName=broker-a        lines of it included, is replaced
//	                                storeReplyMessageEnable=false   by one line; keys not in the file
//	                                                                are appended, sorted)
//
// Values are written as Parse reads them back: set's values must not hold line breaks (the
// caller refuses them). Rewrite is pure: the caller reads and writes the file.
func Rewrite(src []byte, set map[string]string) []byte {
	lines := strings.SplitAfter(string(src), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	done := map[string]bool{}
	var out strings.Builder
	out.Grow(len(src) + 64)
	// The same state machine as Parse: a logical line runs from start to the first physical
	// line that does not end in an odd run of backslashes.
	var pending strings.Builder
	start := -1
	dangling := false // the file ends inside a logical line
	flush := func(end int) {
		key, _ := splitKV(pending.String())
		if v, ok := set[key]; ok && key != "" {
			out.WriteString(key + "=" + v + lineEnd(lines[end]))
			done[key] = true
		} else {
			for k := start; k <= end; k++ {
				out.WriteString(lines[k])
			}
		}
		pending.Reset()
		start = -1
	}
	for i, phys := range lines {
		line := strings.TrimLeft(strings.TrimRight(phys, "\r\n"), " \t\f")
		if pending.Len() == 0 {
			// A line that continued nothing ("\\" alone) is kept as it is.
			for k := start; k >= 0 && k < i; k++ {
				out.WriteString(lines[k])
			}
			start = -1
			if line == "" || line[0] == '#' || line[0] == '!' {
				out.WriteString(phys)
				continue
			}
			start = i
		}
		if countTrailingBackslashes(line)%2 == 1 {
			pending.WriteString(line[:len(line)-1])
			continue
		}
		pending.WriteString(line)
		flush(i)
	}
	if start >= 0 {
		if pending.Len() > 0 {
			flush(len(lines) - 1)
		} else {
			for k := start; k < len(lines); k++ {
				out.WriteString(lines[k])
			}
		}
		// What Parse still reads as one logical line must not swallow the lines appended below.
		if s := out.String(); s != "" && countTrailingBackslashes(strings.TrimRight(s, "\r\n"))%2 == 1 {
			dangling = true
		}
	}
	var missing []string
	for k := range set {
		if !done[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		if s := out.String(); s != "" && !strings.HasSuffix(s, "\n") {
			out.WriteByte('\n')
		}
		if dangling {
			out.WriteByte('\n') // an empty line ends it
		}
		for _, k := range missing {
			out.WriteString(k + "=" + set[k] + "\n")
		}
	}
	return []byte(out.String())
}

// lineEnd is the line break l ends with ("\n" when it has none: the file's last line).
func lineEnd(l string) string {
	if strings.HasSuffix(l, "\r\n") {
		return "\r\n"
	}
	return "\n"
}
