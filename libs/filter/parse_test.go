package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// parseErrorCase is a selector RocketMQ 5.x refuses (SelectorParser.parse throws), with a
// piece of our message and where we report it.
type parseErrorCase struct {
	name   string
	sel    string
	msg    string // substring of ParseError.Msg
	line   int
	column int
}

var parseErrorCases = []parseErrorCase{
	{"empty selector", "", "found the end of the expression", 1, 1},
	{"blank selector", "  \t", "found the end of the expression", 1, 4},
	{"ParserTest.invalidExpression: BETWEEN without a left side", "a and between 2 and 10", `found "between"`, 1, 7},
	{"ParserTest.illegalBetween: bounds in the wrong order", " a between 10 and 0", "greater than the upper bound", 1, 4},
	{"ParserTest.testParse_decimalOverFlow", "a > 100000000000000000000000", "out of the range of a 64-bit long", 1, 5},
	{"long literal just past Long.MAX_VALUE", "a > 9223372036854775808", "out of the range", 1, 5},
	{"float literal overflowing to infinity", "a > 1e400", "greater than the largest double", 1, 5},
	{"float literal 0.0 is below Double.MIN_VALUE", "a > 0.0", "less than the smallest positive double", 1, 5},
	{"float literal underflowing to zero", "a > 1e-400", "less than the smallest positive double", 1, 5},
	{"incomplete comparison", "a >", "found the end of the expression", 1, 4},
	{"string literal compared with >", "a > 'x'", "'x' cannot be compared with >", 1, 3},
	{"string literal compared with <= on the left", "'5' <= a", "cannot be compared with <=", 1, 5},
	{"TRUE compared with >", "a > TRUE", "TRUE cannot be compared", 1, 3},
	{"NULL compared with <", "a < NULL", "NULL cannot be compared", 1, 3},
	{"condition compared with >", "(a = 1) > 0", "cannot be compared with >", 1, 9},
	{"NOT binds tighter: NOT a > 5 compares a condition", "NOT a > 5", "cannot be compared with >", 1, 7},
	{"NOT a BETWEEN compares a condition", "NOT a BETWEEN 1 AND 2", "cannot be compared with BETWEEN", 1, 7},
	{"string bounds of BETWEEN", "a BETWEEN 'a' AND 'b'", "cannot be compared with BETWEEN", 1, 3},
	{"string bounds of NOT BETWEEN", "a NOT BETWEEN 'a' AND 'b'", "cannot be compared with NOT BETWEEN", 1, 7},
	{"NULL bound of BETWEEN", "a BETWEEN NULL AND 5", "cannot be NULL", 1, 3},
	{"string and number bounds of BETWEEN cannot be compared", "a BETWEEN 'x' AND 5", "cannot be compared", 1, 3},
	{"BETWEEN without AND", "a BETWEEN 1 OR 2", "expected AND between the bounds", 1, 13},
	{"NULL literal in =", "a = NULL", "NULL cannot be compared with '=' or '<>'", 1, 3},
	{"NULL literal in <> on the left", "NULL <> a", "NULL cannot be compared", 1, 6},
	{"TRUE = number literal", "TRUE = 1", "TRUE cannot be compared with 1", 1, 6},
	{"FALSE = string literal", "FALSE = 'x'", "FALSE cannot be compared with 'x'", 1, 7},
	{"number as the whole selector", "5", "will not result in a boolean value: 5", 1, 1},
	{"string as the whole selector", "'x'", "will not result in a boolean value", 1, 1},
	{"negation as the whole selector", "-a", "will not result in a boolean value: -a", 1, 1},
	{"number as an AND operand", "a = 1 AND 5", "will not result in a boolean value: 5", 1, 11},
	{"number under NOT", "NOT 5", "will not result in a boolean value", 1, 5},
	{"IN needs a property", "'x' IN ('x')", "IN needs a property name on its left", 1, 1},
	{"IN of a negated property", "-a IN ('x')", "IN needs a property name", 1, 1},
	{"IN needs string literals", "a IN (1, 2)", "expected a string literal in the IN list", 1, 7},
	{"IN needs parentheses", "a IN 'x'", "expected '(' after IN", 1, 6},
	{"IN list left open", "a IN ('x'", "expected ',' or ')' in the IN list", 1, 10},
	{"empty IN list", "a IN ()", "expected a string literal", 1, 7},
	{"CONTAINS needs a string literal", "value contains x", "expected a string literal after CONTAINS", 1, 16},
	{"ExpressionTest.testContains_has_not_string_2: CONTAINS a number", "value contains 123", "expected a string literal", 1, 16},
	{"ExpressionTest.testContains_string_has_nothing", "'axb' contains ", "expected a string literal", 1, 16},
	{"ExpressionTest.test_notContains_has_not_string_1", "value not contains x", "expected a string literal after CONTAINS", 1, 20},
	{"NOT after a comparison needs BETWEEN, IN or CONTAINS", "a = 1 NOT b", "after NOT", 1, 11},
	{"NOT after a name needs BETWEEN, IN or CONTAINS", "a NOT b", "after NOT", 1, 7},
	{"IS needs NULL or NOT NULL", "a IS 5", "expected NULL or NOT NULL after IS", 1, 6},
	{"IS NOT needs NULL", "a IS NOT 5", "expected NULL after IS NOT", 1, 10},
	{"'==' is not an operator", "a == 5", `found "="`, 1, 4},
	{"'!=' is not an operator", "a != 5", "unexpected character '!'", 1, 3},
	{"double-quoted strings do not exist", `a = "x"`, "unexpected character '\"'", 1, 5},
	{"unterminated string literal", "a = 'x", "unterminated string literal", 1, 5},
	{"unterminated block comment", "a = 1 /* x", "unterminated comment", 1, 7},
	{"lexical error right after a complete expression", "a > 5 #", "unexpected character '#'", 1, 7},
	{"lexical error in the next line", "a > 5\n  #", "unexpected character '#'", 2, 3},
	{"non-ASCII name", "é = 'x'", "unexpected character 'é'", 1, 1},
	{"a name cannot start with a digit: 1a is 1 and a", "1a = 5", "will not result in a boolean value: 1", 1, 1},
	{"unbalanced parenthesis", "(a = 1", "expected ')'", 1, 7},
	{"lone plus", "+", "found the end of the expression", 1, 2},
	{"dot without digits", "a > .", "'.' must be followed by a digit", 1, 5},
	{"hexadecimal literals do not exist: 0x10 is 0 and x10", "0x10 = a", "will not result in a boolean value: 0", 1, 1},
	{"a line comment eats the operand", "a = --5\n", "found the end of the expression", 2, 1},
	{"CONTAINS is a keyword in 5.x, not a property name", "contains = 'x'", `found "contains"`, 1, 1},
	{"string with a doubled quote left open", "a = 'x''", "unterminated string literal", 1, 8},
	{"string literal ending inside a doubled quote: the rest is refused", "x = 'a'' b'' c", "unterminated string literal", 1, 12},
}

func TestParseRefusesWhatRocketMQRefuses(t *testing.T) {
	for _, c := range parseErrorCases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Parse(c.sel)
			require.Error(t, err, "selector %q parsed as %v", c.sel, e)
			require.True(t, errors.Is(err, ErrParse))
			var pe *ParseError
			require.True(t, errors.As(err, &pe))
			require.Contains(t, pe.Msg, c.msg, "selector %q", c.sel)
			require.Equal(t, [2]int{c.line, c.column}, [2]int{pe.Line, pe.Column}, "position of %q in %q", pe.Msg, c.sel)
			require.Contains(t, err.Error(), pe.Msg)
		})
	}
}

// acceptedCase is a selector RocketMQ 5.x accepts, with our canonical form and the text its
// parser ignores.
type acceptedCase struct {
	name      string
	sel       string
	canonical string
	trailing  string
}

var acceptedCases = []acceptedCase{
	{"ParserTest.andExpression", "a=3 and b<>4 And c>5 AND d<=4", "a = 3 AND b <> 4 AND c > 5 AND d <= 4", ""},
	{"ParserTest.andExpressionHasBlank: blanks do not matter", "a=3  and    b<>4 And c>5 AND d<=4", "a = 3 AND b <> 4 AND c > 5 AND d <= 4", ""},
	{"ParserTest.orExpression", "a=3 or b<>4 Or c>5 OR d<=4", "a = 3 OR b <> 4 OR c > 5 OR d <= 4", ""},
	{"ParserTest.inExpression", "a in ('3', '4', '5')", "a IN ('3', '4', '5')", ""},
	{"ParserTest.notInExpression", "(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))", "a NOT IN ('6', '4', '5') OR b IN ('3', '4', '5')", ""},
	{"ParserTest.betweenExpression", "(a between 2 and 10) AND (b not between 6 and 9)", "a BETWEEN 2 AND 10 AND b NOT BETWEEN 6 AND 9", ""},
	{"ParserTest.equalNullExpression", "a is null", "a IS NULL", ""},
	{"ParserTest.notEqualNullExpression", "a is not null", "a IS NOT NULL", ""},
	{"ParserTest.nowExpression", "a <= now", "a <= now", ""},
	{"ParserTest.containsExpression", "a=3 and b contains 'xxx' and c not contains 'xxx'", "a = 3 AND b CONTAINS 'xxx' AND c NOT CONTAINS 'xxx'", ""},
	{"nested chains flatten", "(a = 1 AND b = 2) AND (c = 3 AND d = 4)", "a = 1 AND b = 2 AND c = 3 AND d = 4", ""},
	{"AND inside OR keeps its parentheses", "a = 1 OR b = 2 AND c = 3", "a = 1 OR (b = 2 AND c = 3)", ""},
	{"NOT binds tighter than =", "NOT a = 5", "NOT a = 5", ""},
	{"NOT of a comparison", "NOT (a = 5)", "NOT (a = 5)", ""},
	{"double negation", "a = - -5", "a = - -5", ""},
	{"unary plus disappears", "a = +5", "a = 5", ""},
	{"literal classes survive", "a = 5 OR a = 5L OR a = 3000000000 OR a = 5.0 OR a = .5 OR a = 1e3 OR a = 'x' OR a = TRUE", "a = 5 OR a = 5 OR a = 3000000000 OR a = 5.0 OR a = 0.5 OR a = 1000.0 OR a = 'x' OR a = TRUE", ""},
	{"smallest positive double", "a > 4.9e-324", "a > 5e-324", ""},
	{"quotes in literals", "a = 'it''s' OR a IN ('''')", "a = 'it''s' OR a IN ('''')", ""},
	{"BETWEEN with negated reversed bounds is not checked", "a BETWEEN 5 AND -5", "a BETWEEN 5 AND -5", ""},
	{"NOT BETWEEN with reversed bounds is not checked", "a NOT BETWEEN 10 AND 2", "a NOT BETWEEN 10 AND 2", ""},
	{"BETWEEN with mixed number classes", "a BETWEEN 1 AND 2.5", "a BETWEEN 1 AND 2.5", ""},
	{"= of a negated NULL is accepted", "a = -NULL", "a = -NULL", ""},
	{"IS NULL chains", "a IS NULL IS NULL", "(a IS NULL) IS NULL", ""},
	{"names with $ and _", "$a = 1 AND _b1 = 2", "$a = 1 AND _b1 = 2", ""},
	{"trailing name ignored", "a > 5 b", "a > 5", "b"},
	{"trailing parenthesis ignored", "a > 5)", "a > 5", ")"},
	{"trailing typo ignored", "a > 5 ANDD b < 3", "a > 5", "ANDD b < 3"},
	{"trailing unterminated string ignored when not read", "a > 5 b 'x", "a > 5", "b 'x"},
	{"trailing line comment without a line end: minus signs", "a = 1 -- note", "a = 1", "-- note"},
	{"a line comment with a line end", "a = 1 -- note\n", "a = 1", ""},
	{"0L is 0 followed by the name L", "a = 0L", "a = 0", "L"},
	{"007 is 0 followed by 07", "a = 007", "a = 0", "07"},
	{"keywords in any case", "A iS NoT nUlL", "A IS NOT NULL", ""},
	{"comparison chains", "(a > 1) = (b < 2) = TRUE", "((a > 1) = (b < 2)) = TRUE", ""},
	{"CONTAINS of CONTAINS", "a CONTAINS 'x' CONTAINS 'y'", "(a CONTAINS 'x') CONTAINS 'y'", ""},
	{"5 = TRUE is accepted (only TRUE on the left is checked)", "5 = TRUE", "5 = TRUE", ""},
}

func TestParseAcceptsWhatRocketMQAccepts(t *testing.T) {
	for _, c := range acceptedCases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Parse(c.sel)
			require.NoError(t, err, "selector %q", c.sel)
			require.Equal(t, c.canonical, e.String())
			require.Equal(t, c.trailing, e.Trailing())
			require.Equal(t, c.sel, e.Source())
			e2, err := Parse(e.String())
			require.NoError(t, err)
			require.Equal(t, e.String(), e2.String(), "canonical form is a fixed point")
			require.Equal(t, "", e2.Trailing())
		})
	}
}

func TestParseProperties(t *testing.T) {
	e, err := Parse("b = 1 AND a > 2 OR b IS NULL OR TAGS IN ('x')")
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a", "TAGS"}, e.Properties())
}

func TestParseLimits(t *testing.T) {
	t.Run("MaxLength", func(t *testing.T) {
		ok := "a IN ('" + strings.Repeat("x", MaxLength-len("a IN ('')")) + "')"
		require.Len(t, ok, MaxLength)
		_, err := Parse(ok)
		require.NoError(t, err)
		_, err = Parse(ok + " ")
		require.ErrorIs(t, err, ErrTooLong)
		require.ErrorIs(t, err, ErrParse)
	})
	t.Run("parentheses", func(t *testing.T) {
		deep := func(n int) string { return strings.Repeat("(", n) + "a = 1" + strings.Repeat(")", n) }
		_, err := Parse(deep(MaxDepth))
		require.NoError(t, err)
		_, err = Parse(deep(MaxDepth + 1))
		require.ErrorIs(t, err, ErrTooDeep)
		require.ErrorIs(t, err, ErrParse)
		// A hostile nesting far past the limit fails fast, without deep recursion.
		_, err = Parse(deep(MaxLength/2 - 4))
		require.ErrorIs(t, err, ErrTooDeep)
	})
	t.Run("prefix operators", func(t *testing.T) {
		_, err := Parse(strings.Repeat("NOT ", MaxDepth-2) + "a") // NOTs, the cast and the name
		require.NoError(t, err)
		_, err = Parse(strings.Repeat("NOT ", MaxDepth+1) + "a")
		require.ErrorIs(t, err, ErrTooDeep)
		_, err = Parse("a = " + strings.Repeat("-", MaxLength/2) + "5")
		require.ErrorIs(t, err, ErrTooDeep)
	})
	t.Run("tree height without parentheses", func(t *testing.T) {
		_, err := Parse("a" + strings.Repeat(" IS NULL", MaxDepth-2))
		require.NoError(t, err)
		_, err = Parse("a" + strings.Repeat(" IS NULL", MaxDepth))
		require.ErrorIs(t, err, ErrTooDeep)
	})
	t.Run("AND and OR chains of any length", func(t *testing.T) {
		var terms []string
		for i := 0; len(strings.Join(terms, " OR ")) < MaxLength-20; i++ {
			terms = append(terms, "a = "+string(rune('0'+i%10)))
		}
		sel := strings.Join(terms, " OR ")
		e, err := Parse(sel)
		require.NoError(t, err)
		require.True(t, e.MatchRaw(rawProps(P{"a": "9"})))
		e2, err := Parse(e.String())
		require.NoError(t, err)
		require.Equal(t, e.String(), e2.String())
	})
}

func TestParseErrorPositionCountsCharacters(t *testing.T) {
	_, err := Parse("a = 'ééé' #")
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, 13, pe.Offset)
	require.Equal(t, 11, pe.Column)
	_, err = Parse("a = 1\r\n AND\r\n #")
	require.ErrorAs(t, err, &pe)
	require.Equal(t, [2]int{3, 2}, [2]int{pe.Line, pe.Column})
}
