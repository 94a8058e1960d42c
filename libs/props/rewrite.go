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
	// The same logical lines as Parse: an entry continues while its line ends in an odd
	// number of backslashes and what it holds so far is not empty.
	var raws strings.Builder // the current entry's lines as they are in src
	var logical strings.Builder
	end := func() { // the current entry is complete: replaced or copied
		k, _ := splitKV(logical.String())
		if v, ok := set[k]; ok {
			seen[k] = true
			out.WriteString(k + "=" + v + "\n")
		} else {
			out.WriteString(raws.String())
		}
		raws.Reset()
		logical.Reset()
	}
	for _, raw := range strings.SplitAfter(string(src), "\n") {
		if raw == "" {
			continue
		}
		line := strings.TrimLeft(strings.TrimRight(raw, "\r\n"), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			out.WriteString(raws.String()) // lines of an entry that held nothing
			raws.Reset()
			out.WriteString(raw)
			continue
		}
		raws.WriteString(raw)
		if countTrailingBackslashes(line)%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			continue
		}
		logical.WriteString(line)
		end()
	}
	keep := false
	if logical.Len() > 0 || raws.Len() > 0 {
		if !strings.HasSuffix(raws.String(), "\n") {
			raws.WriteString("\n")
		}
		keep = logical.Len() > 0 // an entry that continues past the end
		end()
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
	if len(rest) > 0 && keep {
		out.WriteString("\n") // the last entry continues: an empty line ends it
	}
	for _, k := range rest {
		out.WriteString(k + "=" + set[k] + "\n")
	}
	return []byte(out.String())
}
