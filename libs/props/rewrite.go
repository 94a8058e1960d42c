package props

import (
	"sort"
	"strings"
)

// Rewrite returns the properties text src with the keys of set given new values, the way
// RocketMQ's UPDATE_*_CONFIG persists a change: every entry of such a key (its continuation
// lines included) becomes one "key=value" line in place, so that the file's last entry, the
// one Parse lets win, holds the new value; keys src does not hold are appended in sorted order.
// Comments, blank lines and the other entries are kept as they are. Values must not hold a
// line break or end in a backslash (Parse never yields such a value).
func Rewrite(src []byte, set map[string]string) []byte {
	var out strings.Builder
	seen := map[string]bool{}
	lines := strings.SplitAfter(string(src), "\n")
	skip, keep := false, false // inside the continuation lines of a replaced, a kept entry
	for _, raw := range lines {
		if raw == "" {
			continue
		}
		body := strings.TrimRight(raw, "\r\n")
		line := strings.TrimLeft(body, " \t\f")
		cont := countTrailingBackslashes(line)%2 == 1
		if skip {
			skip = cont
			continue
		}
		if keep {
			out.WriteString(raw)
			keep = cont
			continue
		}
		if line == "" || line[0] == '#' || line[0] == '!' {
			out.WriteString(raw)
			continue
		}
		k, _ := splitKV(strings.TrimSuffix(line, "\\"))
		v, ok := set[k]
		if !ok {
			out.WriteString(raw)
			keep = cont
			continue
		}
		out.WriteString(k + "=" + v + "\n")
		seen[k] = true
		skip = cont
	}
	rest := make([]string, 0, len(set))
	for k := range set {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	if len(rest) > 0 && out.Len() > 0 && !strings.HasSuffix(out.String(), "\n") {
		out.WriteString("\n")
	}
	for _, k := range rest {
		out.WriteString(k + "=" + set[k] + "\n")
	}
	return []byte(out.String())
}
