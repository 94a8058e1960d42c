package filter

import (
	"strings"
	"unicode/utf8"
)

// tokKind is a token of RocketMQ's selector grammar.
type tokKind uint8

const (
	tEOF tokKind = iota
	// keywords (case-insensitive)
	tNot
	tAnd
	tOr
	tBetween
	tIn
	tTrue
	tFalse
	tNull
	tIs
	tContains
	tStartsWith
	tEndsWith
	// literals and names
	tDecimal
	tFloat
	tString
	tID
	// operators and punctuation
	tEq
	tNe
	tGt
	tGe
	tLt
	tLe
	tLParen
	tComma
	tRParen
	tPlus
	tMinus
)

var tokNames = [...]string{
	tEOF: "end of expression", tNot: "NOT", tAnd: "AND", tOr: "OR", tBetween: "BETWEEN", tIn: "IN",
	tTrue: "TRUE", tFalse: "FALSE", tNull: "NULL", tIs: "IS", tContains: "CONTAINS",
	tStartsWith: "STARTSWITH", tEndsWith: "ENDSWITH", tDecimal: "integer literal",
	tFloat: "floating-point literal", tString: "string literal", tID: "property name",
	tEq: "'='", tNe: "'<>'", tGt: "'>'", tGe: "'>='", tLt: "'<'", tLe: "'<='", tLParen: "'('",
	tComma: "','", tRParen: "')'", tPlus: "'+'", tMinus: "'-'",
}

func (k tokKind) String() string { return tokNames[k] }

// keywords are matched case-insensitively over ASCII letters only, as RocketMQ's generated
// token manager does; a longer identifier (NOTE, INT) is an identifier.
var keywords = map[string]tokKind{
	"NOT": tNot, "AND": tAnd, "OR": tOr, "BETWEEN": tBetween, "IN": tIn, "TRUE": tTrue,
	"FALSE": tFalse, "NULL": tNull, "IS": tIs, "CONTAINS": tContains, "STARTSWITH": tStartsWith,
	"ENDSWITH": tEndsWith,
}

type token struct {
	kind  tokKind
	start int    // byte offset of the first character
	text  string // the token as written
	str   string // decoded value of a string literal
}

// lexer produces tokens on demand. RocketMQ's parser asks its token manager for one token at
// a time and stops reading as soon as the grammar is satisfied, so text after a complete
// expression is never tokenised; lexing lazily keeps the same split between accepted and
// refused input (a lexical error two tokens past the end of an expression is not seen).
type lexer struct {
	src string
	pos int
	err *ParseError
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIDPart(c byte) bool { return isIDStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skip passes over white space and comments. A line comment is "--" up to and including the
// end of its line; without a line end before the end of the input it is no comment (the two
// dashes are then two minus signs). An unterminated block comment is left for next to refuse.
func (l *lexer) skip() {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case c == '-' && strings.HasPrefix(l.src[l.pos:], "--"):
			nl := strings.IndexAny(l.src[l.pos+2:], "\r\n")
			if nl < 0 {
				return
			}
			end := l.pos + 2 + nl + 1
			if l.src[end-1] == '\r' && end < len(l.src) && l.src[end] == '\n' {
				end++
			}
			l.pos = end
		case c == '/' && strings.HasPrefix(l.src[l.pos:], "/*"):
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return
			}
			l.pos += 2 + end + 2
		default:
			return
		}
	}
}

// next returns the next token, or false with l.err set at a lexical error.
func (l *lexer) next() (token, bool) {
	l.skip()
	start := l.pos
	if start >= len(l.src) {
		return token{kind: tEOF, start: start}, true
	}
	c := l.src[start]
	end := start + 1
	var kind tokKind
	switch {
	case isIDStart(c):
		for end < len(l.src) && isIDPart(l.src[end]) {
			end++
		}
		kind = tID
		if end-start <= len("STARTSWITH") {
			if k, ok := keywords[strings.ToUpper(l.src[start:end])]; ok {
				kind = k
			}
		}
	case isDigit(c) || c == '.':
		var ok bool
		kind, end, ok = scanNumber(l.src, start)
		if !ok {
			return l.lexError(start, "'.' must be followed by a digit")
		}
	case c == '\'':
		return l.scanString(start)
	case c == '=':
		kind = tEq
	case c == '<':
		kind = tLt
		if end < len(l.src) && l.src[end] == '>' {
			kind, end = tNe, end+1
		} else if end < len(l.src) && l.src[end] == '=' {
			kind, end = tLe, end+1
		}
	case c == '>':
		kind = tGt
		if end < len(l.src) && l.src[end] == '=' {
			kind, end = tGe, end+1
		}
	case c == '(':
		kind = tLParen
	case c == ')':
		kind = tRParen
	case c == ',':
		kind = tComma
	case c == '+':
		kind = tPlus
	case c == '-':
		kind = tMinus
	case c == '/' && strings.HasPrefix(l.src[start:], "/*"):
		return l.lexError(start, "unterminated comment")
	default:
		r, _ := utf8.DecodeRuneInString(l.src[start:])
		if r == utf8.RuneError {
			return l.lexError(start, "unexpected byte "+quoteByte(c))
		}
		return l.lexError(start, "unexpected character "+quoteRune(r))
	}
	l.pos = end
	return token{kind: kind, start: start, text: l.src[start:end]}, true
}

// scanNumber takes the longest numeric literal at start, as RocketMQ's token manager does:
//
//	DECIMAL = "0" | [1-9] [0-9]* [lL]?
//	FLOAT   = [0-9]+ "." [0-9]* EXP? | "." [0-9]+ EXP? | [0-9]+ EXP
//	EXP     = [eE] [+-]? [0-9]+
//
// so "007" is three literals 0, 0 and 7, "0L" is 0 followed by the name L, and "1e" is 1
// followed by the name e. ok is false for a '.' without a digit after it.
func scanNumber(s string, start int) (kind tokKind, end int, ok bool) {
	digitsEnd := func(i int) int {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i
	}
	expEnd := func(i int) int { // end of an exponent starting at i, or i if there is none
		if i >= len(s) || (s[i] != 'e' && s[i] != 'E') {
			return i
		}
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if k := digitsEnd(j); k > j {
			return k
		}
		return i
	}
	if s[start] == '.' {
		j := digitsEnd(start + 1)
		if j == start+1 {
			return 0, 0, false
		}
		return tFloat, expEnd(j), true
	}
	j := digitsEnd(start)
	decEnd := start + 1
	if s[start] != '0' {
		decEnd = j
		if decEnd < len(s) && (s[decEnd] == 'l' || s[decEnd] == 'L') {
			decEnd++
		}
	}
	floatEnd := start
	if j < len(s) && s[j] == '.' {
		floatEnd = expEnd(digitsEnd(j + 1))
	} else if e := expEnd(j); e > j {
		floatEnd = e
	}
	if floatEnd > decEnd {
		return tFloat, floatEnd, true
	}
	return tDecimal, decEnd, true
}

// scanString reads a string literal: quotes with a doubled quote standing for one. Like
// RocketMQ's token manager it takes the longest well-formed literal: when the input ends
// inside a literal, the literal ends at the last quote that could close it and the rest is
// lexed again (and fails when it is read).
func (l *lexer) scanString(start int) (token, bool) {
	s := l.src
	lastClose := -1 // end offset of the longest well-formed literal so far
	i := start + 1
	for i < len(s) {
		if s[i] != '\'' {
			i++
			continue
		}
		lastClose = i + 1
		if i+1 < len(s) && s[i+1] == '\'' {
			i += 2
			continue
		}
		break
	}
	if lastClose < 0 {
		return l.lexError(start, "unterminated string literal")
	}
	body := s[start+1 : lastClose-1]
	l.pos = lastClose
	return token{kind: tString, start: start, text: s[start:lastClose], str: strings.ReplaceAll(body, "''", "'")}, true
}

func (l *lexer) lexError(at int, msg string) (token, bool) {
	l.err = errorAt(l.src, at, "lexical error: "+msg, nil)
	return token{}, false
}

// errorAt builds a ParseError for byte offset at of src.
func errorAt(src string, at int, msg string, limit error) *ParseError {
	at = min(max(at, 0), len(src))
	line, col := 1, 1
	for i := 0; i < at; {
		r, size := utf8.DecodeRuneInString(src[i:])
		i += size
		switch {
		case r == '\n':
			line, col = line+1, 1
		case r == '\r':
			if i < len(src) && src[i] == '\n' {
				continue // \r\n is one line end, counted at the \n
			}
			line, col = line+1, 1
		default:
			col++
		}
	}
	return &ParseError{Offset: at, Line: line, Column: col, Msg: msg, limit: limit}
}

func quoteByte(c byte) string {
	const hex = "0123456789abcdef"
	return "0x" + string([]byte{hex[c>>4], hex[c&15]})
}

func quoteRune(r rune) string {
	if r < 0x20 || r == 0x7f {
		return quoteByte(byte(r))
	}
	return "'" + string(r) + "'"
}
