package props

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Entry is one key=value pair of a properties file and where it was read.
type Entry struct {
	Key    string
	Value  string
	Source string // "file:line", "env NAME" or "flag -name"
}

// ParseFile reads a properties file.
func ParseFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("props: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads Java properties syntax: `key=value`, `key: value` or `key value`;
// lines starting with # or ! are comments; a trailing backslash continues the
// logical line. Later duplicates override earlier ones (as in Java).
func Parse(r io.Reader, name string) ([]Entry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var out []Entry
	lineNo := 0
	var pending strings.Builder
	startLine := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending.Len() == 0 {
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			startLine = lineNo
		}
		if cont := countTrailingBackslashes(line)%2 == 1; cont {
			pending.WriteString(line[:len(line)-1])
			continue
		}
		pending.WriteString(line)
		logical := pending.String()
		pending.Reset()
		k, v := splitKV(logical)
		if k == "" {
			return nil, fmt.Errorf("props: %s:%d: line has no key", name, startLine)
		}
		out = append(out, Entry{Key: k, Value: v, Source: fmt.Sprintf("%s:%d", name, startLine)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("props: %s: %w", name, err)
	}
	if pending.Len() > 0 {
		k, v := splitKV(pending.String())
		if k != "" {
			out = append(out, Entry{Key: k, Value: v, Source: fmt.Sprintf("%s:%d", name, startLine)})
		}
	}
	return out, nil
}

func countTrailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

func splitKV(s string) (string, string) {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '=', ':', ' ', '\t':
			k := strings.TrimSpace(s[:i])
			rest := strings.TrimLeft(s[i:], " \t")
			if len(rest) > 0 && (rest[0] == '=' || rest[0] == ':') {
				rest = rest[1:]
			}
			return k, strings.TrimSpace(rest)
		}
	}
	return s, ""
}
