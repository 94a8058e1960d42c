package filter

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// P is a message's properties in a test case.
type P map[string]string

// evalCase pins one evaluation result of RocketMQ 5.x (SelectorParser.parse, then evaluate
// over the message's string properties, as ExpressionMessageFilter does). name says which
// RocketMQ behaviour it pins; cases named after a RocketMQ test class and method port that
// test's case (facts only; RocketMQ's own tests use typed values where noted).
type evalCase struct {
	name  string
	sel   string
	props P
	want  Result
}

// rawProps encodes p as the commit log stores properties (sorted names, each pair ending in
// 0x02).
func rawProps(p P) []byte {
	names := make([]string, 0, len(p))
	for k := range p {
		names = append(names, k)
	}
	sort.Strings(names)
	var b []byte
	for _, k := range names {
		b = append(b, k...)
		b = append(b, propNameSep)
		b = append(b, p[k]...)
		b = append(b, propPairSep)
	}
	return b
}

func runEvalCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Parse(c.sel)
			require.NoError(t, err, "selector %q", c.sel)
			require.Equal(t, c.want, e.EvalMap(c.props), "EvalMap: %q over %v", c.sel, c.props)
			require.Equal(t, c.want, e.EvalRaw(rawProps(c.props)), "EvalRaw: %q over %v", c.sel, c.props)
			require.Equal(t, c.want, e.Eval(mapProps(c.props)), "Eval: %q over %v", c.sel, c.props)
			require.Equal(t, c.want == True, e.MatchRaw(rawProps(c.props)))
			// The canonical form evaluates the same.
			e2, err := Parse(e.String())
			require.NoError(t, err, "reparse %q", e.String())
			require.Equal(t, c.want, e2.EvalMap(c.props), "canonical %q", e.String())
		})
	}
}

type mapProps map[string]string

func (m mapProps) Property(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

var missingPropertyCases = []evalCase{
	{"missing property: comparison is NULL", "a > 5", nil, Unknown},
	{"missing property: equality with it on the left is NULL", "a = 'x'", nil, Unknown},
	{"missing property: equality with it on the right is FALSE", "'x' = a", nil, False},
	{"missing property: <> with it on the left stays NULL", "a <> 'x'", nil, Unknown},
	{"missing property: <> with it on the right is TRUE", "'x' <> a", nil, True},
	{"missing property: two missing properties are equal", "a = b", nil, True},
	{"missing property: two missing properties are not unequal", "a <> b", nil, False},
	{"missing property: IS NULL is TRUE", "a IS NULL", nil, True},
	{"missing property: IS NOT NULL is FALSE", "a IS NOT NULL", nil, False},
	{"missing property: NOT of NULL is NULL", "NOT (a > 5)", nil, Unknown},
	{"missing property: BETWEEN is NULL", "a BETWEEN 1 AND 10", nil, Unknown},
	{"missing property: NOT BETWEEN is NULL", "a NOT BETWEEN 1 AND 10", nil, Unknown},
	{"missing property: IN is NULL", "a IN ('x')", nil, Unknown},
	{"missing property: NOT IN is NULL", "a NOT IN ('x')", nil, Unknown},
	{"missing property: NOT (IN) is NULL", "NOT (a IN ('x'))", nil, Unknown},
	{"missing property: CONTAINS is FALSE", "a CONTAINS 'x'", nil, False},
	{"missing property: NOT CONTAINS is FALSE too", "a NOT CONTAINS 'x'", nil, False},
	{"missing property: NOT (CONTAINS) is TRUE", "NOT (a CONTAINS 'x')", nil, True},
	{"missing property: STARTSWITH and ENDSWITH are FALSE", "a STARTSWITH 'x' OR a ENDSWITH 'x' OR a NOT STARTSWITH 'x'", nil, False},
	{"missing property: bare name as a condition is NULL", "a", nil, Unknown},
	{"missing property: NOT of a bare name is NULL", "NOT a", nil, Unknown},
	{"missing property: NULL AND FALSE is FALSE", "a > 5 AND FALSE", nil, False},
	{"missing property: NULL AND TRUE is NULL", "a > 5 AND TRUE", nil, Unknown},
	{"missing property: NULL OR TRUE is TRUE", "a > 5 OR TRUE", nil, True},
	{"missing property: NULL OR FALSE is NULL", "a > 5 OR FALSE", nil, Unknown},
	{"missing property: right operand of > missing is NULL", "5 > a", nil, Unknown},
	{"missing property: IS NULL of a comparison with it", "(a > 5) IS NULL", nil, True},
	{"missing property: negation is NULL", "-a IS NULL", nil, True},
}

func TestRocketMQ_MissingProperties(t *testing.T) { runEvalCases(t, missingPropertyCases) }

var conversionCases = []evalCase{
	{"string property vs Integer literal: Integer.parseInt", "a > 5", P{"a": "10"}, True},
	{"string property vs Integer literal: not greater", "a > 5", P{"a": "3"}, False},
	{"string property vs Integer literal: equal", "a = 10", P{"a": "10"}, True},
	{"string property vs Integer literal: leading plus sign parses", "a = 7", P{"a": "+7"}, True},
	{"string property vs Integer literal: leading zeros parse", "a = 7", P{"a": "007"}, True},
	{"string property vs Integer literal: Unicode digits parse", "a = 42", P{"a": "٤٢"}, True},
	{"string property vs Integer literal: fullwidth digits parse", "a = 12", P{"a": "１２"}, True},
	{"string property vs Integer literal: decimal point is an error", "a > 5", P{"a": "7.5"}, Error},
	{"string property vs Integer literal: beyond int range is an error", "a > 5", P{"a": "3000000000"}, Error},
	{"string property vs Integer literal: int minimum parses", "a < 0", P{"a": "-2147483648"}, True},
	{"string property vs Integer literal: white space is an error", "a > 5", P{"a": " 7"}, Error},
	{"string property vs Integer literal: non-numeric is an error", "a > 5", P{"a": "abc"}, Error},
	{"string property vs Integer literal: 5L suffix in the value is an error", "a = 5", P{"a": "5L"}, Error},
	{"string property vs Long literal: Long.parseLong", "a < 3000000000", P{"a": "2999999999"}, True},
	{"string property vs Long literal: beyond long range is an error", "a < 3000000000", P{"a": "9223372036854775808"}, Error},
	{"string property vs Double literal: Double.valueOf", "a > 3.14", P{"a": "3.1415"}, True},
	{"string property vs Double literal: integer text", "a = 10.0", P{"a": "10"}, True},
	{"string property vs Double literal: surrounding white space is trimmed", "a > 5.0", P{"a": "\t10\n"}, True},
	{"string property vs Double literal: exponent", "a > 3.1E10", P{"a": "3.1415E10"}, True},
	{"string property vs Double literal: float suffix", "a = 1.5", P{"a": "1.5f"}, True},
	{"string property vs Double literal: hexadecimal floating point", "a = 8.0", P{"a": "0x1p3"}, True},
	{"string property vs Double literal: NaN sorts above everything", "a > 5.0", P{"a": "NaN"}, True},
	{"string property vs Double literal: Infinity", "a > 1e300", P{"a": "Infinity"}, True},
	{"two string properties: Double.compare puts -0.0 below 0.0", "a < b", P{"a": "-0.0", "b": "0.0"}, True},
	{"string property vs Double literal: unparsable is an error", "a > 1.0", P{"a": "1,5"}, Error},
	{"string property vs Double literal: hex without exponent is an error", "a > 1.0", P{"a": "0x10"}, Error},
	{"negated Integer literal", "a > -5", P{"a": "-3"}, True},
	{"negated Long literal is a Long: -2147483648", "a = -2147483648", P{"a": "-2147483648"}, True},
	{"two string properties with >: both Double.valueOf", "a > b", P{"a": "20", "b": "10"}, True},
	{"two string properties with >: numeric, not text, order", "a > b", P{"a": "9", "b": "10"}, False},
	{"two string properties with >: unparsable is an error", "a > b", P{"a": "x", "b": "10"}, Error},
	{"two string properties with =: text equality", "a = b", P{"a": "10", "b": "10.0"}, False},
	{"two string properties with =: same text", "a = b", P{"a": "3.14", "b": "3.14"}, True},
	{"Integer literal left of a property", "5 < a", P{"a": "10"}, True},
	{"Integer literal left of an unparsable property is an error", "5 = a", P{"a": "x"}, Error},
	{"string literal = property: text equality, no conversion", "a = '10'", P{"a": "10"}, True},
	{"string literal = property: no numeric equality", "a = '10'", P{"a": "10.0"}, False},
	{"property = TRUE: Boolean.valueOf, any case", "a = TRUE", P{"a": "TrUe"}, True},
	{"property = TRUE: anything but true is false", "a = TRUE", P{"a": "yes"}, False},
	{"property = FALSE: anything but true is false", "a = FALSE", P{"a": "yes"}, True},
	{"TRUE left of a property: ClassCastException, an error", "TRUE = a", P{"a": "true"}, Error},
	{"TRUE left of a missing property: FALSE", "TRUE = a", nil, False},
	{"number = boolean: different classes compare as not equal", "5 = TRUE", nil, False},
	{"Integer = Double widens", "5 = 5.0", nil, True},
	{"Integer = Long widens", "1 < 3000000000", nil, True},
	{"condition compared with a number: FALSE", "(a > 1) = 1", P{"a": "5"}, False},
	{"condition compared with TRUE", "(a > 1) = TRUE", P{"a": "5"}, True},
	{"negation of a property is NULL", "-a < 0", P{"a": "5"}, Unknown},
	{"negation of a string literal is NULL", "-'5' IS NULL", nil, True},
	{"unary plus is the operand itself", "+a = '5'", P{"a": "5"}, True},
}

func TestRocketMQ_Conversions(t *testing.T) { runEvalCases(t, conversionCases) }

var operatorCases = []evalCase{
	{"BETWEEN includes the lower bound", "a BETWEEN 2 AND 10", P{"a": "2"}, True},
	{"BETWEEN includes the upper bound", "a BETWEEN 2 AND 10", P{"a": "10"}, True},
	{"BETWEEN below", "a BETWEEN 2 AND 10", P{"a": "1"}, False},
	{"BETWEEN unparsable value is an error", "a BETWEEN 2 AND 10", P{"a": "x"}, Error},
	{"BETWEEN with property bounds", "a BETWEEN b AND c", P{"a": "5", "b": "1", "c": "9"}, True},
	{"BETWEEN with a missing bound is NULL", "a BETWEEN b AND 9", P{"a": "5"}, Unknown},
	{"BETWEEN with a negated bound is not checked: nothing matches", "a BETWEEN 5 AND -5", P{"a": "0"}, False},
	{"NOT BETWEEN outside", "a NOT BETWEEN 2 AND 10", P{"a": "11"}, True},
	{"NOT BETWEEN bounds are inside", "a NOT BETWEEN 2 AND 10", P{"a": "10"}, False},
	{"NOT BETWEEN with reversed bounds is accepted: a < 10 OR a > 2", "a NOT BETWEEN 10 AND 2", P{"a": "5"}, True},
	{"IN is exact string equality", "a IN ('3', '4', '5')", P{"a": "4"}, True},
	{"IN does not convert numbers", "a IN ('5')", P{"a": "5.0"}, False},
	{"IN is case-sensitive", "TAGS IN ('TagA')", P{"TAGS": "taga"}, False},
	{"IN with many strings (a set)", "a IN ('1','2','3','4','5','6','7')", P{"a": "6"}, True},
	{"NOT IN", "a NOT IN ('3', '4')", P{"a": "8"}, True},
	{"NOT IN listed", "a NOT IN ('3', '4')", P{"a": "3"}, False},
	{"IN with duplicates", "a IN ('x', 'x')", P{"a": "x"}, True},
	{"CONTAINS", "a CONTAINS 'x'", P{"a": "axb"}, True},
	{"CONTAINS is case-sensitive", "a CONTAINS 'X'", P{"a": "axb"}, False},
	{"CONTAINS an empty string is FALSE", "a CONTAINS ''", P{"a": "axb"}, False},
	{"NOT CONTAINS an empty string is FALSE too", "a NOT CONTAINS ''", P{"a": "axb"}, False},
	{"STARTSWITH", "a STARTSWITH 'ax'", P{"a": "axb"}, True},
	{"ENDSWITH", "a ENDSWITH 'xb'", P{"a": "axb"}, True},
	{"NOT STARTSWITH", "a NOT STARTSWITH 'b'", P{"a": "axb"}, True},
	{"CONTAINS applies to any string operand", "'axb' CONTAINS 'x'", nil, True},
	{"CONTAINS of a number is FALSE", "5 CONTAINS '5'", nil, False},
	{"CONTAINS of a condition is FALSE", "(a = 'x') NOT CONTAINS 'x'", P{"a": "x"}, False},
	{"TAGS is a property", "TAGS = 'TagA'", P{"TAGS": "TagA"}, True},
	{"property names are case-sensitive", "tags = 'TagA'", P{"TAGS": "TagA"}, Unknown},
	{"a bare present property is FALSE as a condition", "a", P{"a": "true"}, False},
	{"NOT of a bare present property is TRUE", "NOT a", P{"a": "x"}, True},
	{"TRUE alone matches every message", "TRUE", nil, True},
	{"FALSE alone matches nothing", "FALSE", nil, False},
	{"NULL alone is NULL", "NULL", nil, Unknown},
	{"NULL IS NULL", "NULL IS NULL", nil, True},
	{"NOT binds tighter than =: (NOT a) = 5 never matches", "NOT a = 5", P{"a": "5"}, False},
	{"AND binds tighter than OR", "a = 1 OR a = 2 AND b = 3", P{"a": "1"}, True},
	{"parentheses group", "(a = 1 OR a = 2) AND b = 3", P{"a": "1"}, Unknown},
	{"= chains associate left", "a = 1 = TRUE", P{"a": "1"}, True},
	{"keywords are case-insensitive", "a iS nOt NuLl aNd a BeTwEeN 1 aNd 9", P{"a": "5"}, True},
	{"string literal with doubled quotes", "a = 'it''s'", P{"a": "it's"}, True},
	{"string literal spanning lines", "a = 'x\ny'", P{"a": "x\ny"}, True},
	{"non-ASCII string literal", "a = 'héllo 世界'", P{"a": "héllo 世界"}, True},
	{"comments are white space", "a /* x */ > -- y\n 5", P{"a": "6"}, True},
	{"trailing text after a complete expression is ignored", "a > 5 garbage", P{"a": "6"}, True},
	{"trailing ')' is ignored", "a > 5)", P{"a": "6"}, True},
	{"a typo after a complete expression widens it", "a > 5 ANDD b = 1", P{"a": "6"}, True},
	{"a line comment without a line end is two minus signs", "a = --5", P{"a": "5"}, True},
	{"error stops evaluation even when OR's other side is TRUE", "a > 5 OR TRUE", P{"a": "x"}, Error},
	{"OR stops at a TRUE left side before an error", "TRUE OR a > 5", P{"a": "x"}, True},
	{"AND stops at a FALSE left side before an error", "FALSE AND a > 5", P{"a": "x"}, False},
	{"a NULL left side of > skips evaluating the right side", "b > -(a > c)", P{"a": "x", "c": "y"}, Unknown},
	{"= evaluates both sides", "b = -(a > c)", P{"a": "x", "c": "y"}, Error},
	{"IS NULL of an error is an error", "(a > 5) IS NULL", P{"a": "x"}, Error},
	{"long OR chain", "a = 1 OR a = 2 OR a = 3 OR a = 4 OR a = 5 OR a = 6", P{"a": "6"}, True},
	{"long AND chain with a NULL", "a = 1 AND b = 1 AND c = 1", P{"a": "1", "c": "1"}, Unknown},
}

func TestRocketMQ_Operators(t *testing.T) { runEvalCases(t, operatorCases) }

// rocketMQTestCases ports the cases of RocketMQ's filter tests (ExpressionTest,
// ParserTest) and SqlFilterIT that apply to string-valued properties.
var rocketMQTestCases = []evalCase{
	{"ExpressionTest.testContains_StartsWith_EndsWith_has", "value contains 'x' and value startswith 'ax' and value endswith 'xb'", P{"value": "axb"}, True},
	{"ExpressionTest.test_notContains_notStartsWith_notEndsWith_has", "value not contains 'x' or value not startswith 'ax' or value not endswith 'xb'", P{"value": "axb"}, False},
	{"ExpressionTest.testContains_StartsWith_EndsWith_has_not", "value contains 'x' or value startswith 'x' or value endswith 'x'", P{"value": "abb"}, False},
	{"ExpressionTest.test_notContains_notStartsWith_notEndsWith_has_not", "value not contains 'x' and value not startswith 'x' and value not endswith 'x'", P{"value": "abb"}, True},
	{"ExpressionTest.testContains_StartsWith_EndsWith_hasEmpty", "value contains '' or value startswith '' or value endswith ''", P{"value": "axb"}, False},
	{"ExpressionTest.test_notContains_notStartsWith_notEndsWith_hasEmpty", "value not contains '' or value not startswith '' or value not endswith ''", P{"value": "axb"}, False},
	{"ExpressionTest.testContains_StartsWith_EndsWith_null_has_2", "value contains 'x' or value startswith 'x' or value endswith 'x'", nil, False},
	{"ExpressionTest.test_notContains_notStartsWith_notEndsWith_null_has_2", "value not contains 'x' or value not startswith 'x' or value not endswith 'x'", nil, False},
	{"ExpressionTest.testContains_StartsWith_EndsWith_string_has_string", "'axb' contains 'x' and 'axb' startswith 'ax' and 'axb' endswith 'xb'", nil, True},
	{"ExpressionTest.test_notContains_notStartsWith_notEndsWith_string_has_string", "'axb' not contains 'x' or 'axb' not startswith 'ax' or 'axb' not endswith 'xb'", nil, False},
	{"ExpressionTest.testContains_startsWith_endsWith_string_has_not_string", "'axb' contains 'u' or 'axb' startswith 'u' or 'axb' endswith 'u'", nil, False},
	{"ExpressionTest.test_notContains_notStartsWith_notEndsWith_string_has_not_string", "'axb' not contains 'u' and 'axb' not startswith 'u' and 'axb' not endswith 'u'", nil, True},
	{"ExpressionTest.testContains_StartsWith_EndsWith_string_has_space", "' ' contains ' ' and ' ' startswith ' ' and ' ' endswith ' '", nil, True},
	{"ExpressionTest.test_notContains_notStartsWith_notEndsWith_string_has_space", "' ' not contains ' ' or ' ' not startswith ' ' or ' ' not endswith ' '", nil, False},
	{"ExpressionTest.testContains_StartsWith_EndsWith_string_has_special_1", "'axb' contains '.' or 'axb' startswith '.' or 'axb' endswith '.'", nil, False},
	{"ExpressionTest.test_notContains_notStartsWith_notEndsWith_string_has_special_1", "'axb' not contains '.' and 'axb' not startswith '.' and 'axb' not endswith '.'", nil, True},
	{"ExpressionTest.testContains_StartsWith_EndsWith_string_has_special_2", "'s' contains '\\' or 's' startswith '\\' or 's' endswith '\\'", nil, False},
	{"ExpressionTest.testContainsAllInOne", "a not in ('4', '4', '5') and b between 3 and 10 and c not contains 'axbc'", P{"a": "3", "b": "3", "c": "axbdc"}, True},
	{"ExpressionTest.testStartsWithAllInOne", "a not in ('4', '4', '5') and b between 3 and 10 and c not startswith 'axbc'", P{"a": "3", "b": "3", "c": "axbdc"}, True},
	{"ExpressionTest.testEndsWithAllInOne", "a not in ('4', '4', '5') and b between 3 and 10 and c not endswith 'axbc'", P{"a": "3", "b": "3", "c": "axbdc"}, True},
	{"ExpressionTest.testEvaluate_stringHasString", "TAGS is not null and TAGS='''''tag'''''", P{"TAGS": "''tag''"}, True},
	{"ExpressionTest.testEvaluate_stringCompare: missing bounds", "a between up and low", P{"a": "3.14"}, Unknown},
	{"ExpressionTest.testEvaluate_stringCompare: unparsable bounds throw", "a between up and low", P{"a": "3.14", "up": "up", "low": "low"}, Error},
	{"ExpressionTest.testEvaluate_stringCompare: unparsable value throws", "key is not null and key between 0 and 100", P{"key": "con"}, Error},
	{"ExpressionTest.testEvaluate_stringCompare: a=b", "a=b", P{"a": "3.14", "b": "3.14"}, True},
	{"ExpressionTest.testEvaluate_stringCompare: a<>b equal", "a<>b", P{"a": "3.14", "b": "3.14"}, False},
	{"ExpressionTest.testEvaluate_stringCompare: a<>b different", "a<>b", P{"a": "3.14", "b": "3.141"}, True},
	{"ExpressionTest.testEvaluate_exponent", "a > 3.1E10", P{"a": "3.1415E10"}, True},
	{"ExpressionTest.testEvaluate_floatNumber", "a > 3.14", P{"a": "3.1415"}, True},
	{"ExpressionTest.testEvaluate_twoVariable", "a > b", P{"a": "10", "b": "20"}, False},
	{"ExpressionTest.testEvaluate_twoVariableGt", "a > b", P{"a": "20", "b": "10"}, True},
	{"ExpressionTest.testEvaluate_nullOr: missing", "a is null OR a='hello'", nil, True},
	{"ExpressionTest.testEvaluate_nullOr: hello", "a is null OR a='hello'", P{"a": "hello"}, True},
	{"ExpressionTest.testEvaluate_nullOr: abc", "a is null OR a='hello'", P{"a": "abc"}, False},
	{"ExpressionTest.testEvaluate_boolean: true false", "a=TRUE OR b=FALSE", P{"a": "true", "b": "false"}, True},
	{"ExpressionTest.testEvaluate_boolean: false true", "a=TRUE OR b=FALSE", P{"a": "false", "b": "true"}, False},
	{"ExpressionTest.testEvaluate_equal: hello", "a is not null and a='hello'", P{"a": "hello"}, True},
	{"ExpressionTest.testEvaluate_equal: missing", "a is not null and a='hello'", nil, False},
	{"ExpressionTest.testEvaluate_andTrue (string values)", "a=3 and b<>4 And c>5 AND d<=4", P{"a": "3", "b": "5", "c": "6", "d": "1"}, True},
	{"ExpressionTest.testEvaluate_andFalse (string values)", "a=3 and b<>4 And c>5 AND d<=4", P{"a": "4", "b": "5", "c": "6", "d": "1"}, False},
	{"ExpressionTest.testEvaluate_orTrue: first", "a=3 or b<>4 Or c>5 OR d<=4", P{"a": "3"}, True},
	{"ExpressionTest.testEvaluate_orTrue: second", "a=3 or b<>4 Or c>5 OR d<=4", P{"a": "4", "b": "5"}, True},
	{"ExpressionTest.testEvaluate_orTrue: third", "a=3 or b<>4 Or c>5 OR d<=4", P{"a": "4", "b": "4", "c": "6"}, True},
	{"ExpressionTest.testEvaluate_orTrue: forth", "a=3 or b<>4 Or c>5 OR d<=4", P{"a": "4", "b": "4", "c": "3", "d": "2"}, True},
	{"ExpressionTest.testEvaluate_orFalse", "a=3 or b<>4 Or c>5 OR d<=4", P{"a": "4", "b": "4", "c": "3", "d": "10"}, False},
	{"ExpressionTest.testEvaluate_inTrue", "a in ('3', '4', '5')", P{"a": "5"}, True},
	{"ExpressionTest.testEvaluate_inFalse", "a in ('3', '4', '5')", P{"a": "8"}, False},
	{"ExpressionTest.testEvaluate_notInTrue", "a not in ('3', '4', '5')", P{"a": "8"}, True},
	{"ExpressionTest.testEvaluate_notInFalse", "a not in ('3', '4', '5')", P{"a": "4"}, False},
	{"ExpressionTest.testEvaluate_betweenTrue", "a between 2 and 10", P{"a": "3"}, True},
	{"ExpressionTest.testEvaluate_betweenFalse", "a between 2 and 10", P{"a": "11"}, False},
	{"ExpressionTest.testEvaluate_notBetweenTrue", "a not between 2 and 10", P{"a": "1"}, True},
	{"ExpressionTest.testEvaluate_notBetweenFalse", "a not between 2 and 10", P{"a": "3"}, False},
	{"ExpressionTest.testEvaluate_isNullTrue", "a is null", P{"abc": "2"}, True},
	{"ExpressionTest.testEvaluate_isNullFalse", "a is null", P{"a": "2"}, False},
	{"ExpressionTest.testEvaluate_isNotNullTrue", "a is not null", P{"a": "2"}, True},
	{"ExpressionTest.testEvaluate_isNotNullFalse", "a is not null", P{"abc": "2"}, False},
	{"ParserTest.nowExpression: now is a property name", "a <= now", P{"a": "1", "now": "2"}, True},
	{"SqlFilterIT: TAGS in a list", "(TAGS is not null and TAGS in ('TagA', 'TagB'))", P{"TAGS": "TagB"}, True},
	{"SqlFilterIT: TAGS not in the list", "(TAGS is not null and TAGS in ('TagA', 'TagB'))", P{"TAGS": "TagC"}, False},
	{"SqlFilterIT: no TAGS", "(TAGS is not null and TAGS in ('TagA', 'TagB'))", nil, False},
	{"MessageStoreWithFilterTest: a is not null OR a is null", "a is not null OR a is null", nil, True},
}

func TestRocketMQ_PortedTests(t *testing.T) { runEvalCases(t, rocketMQTestCases) }

// TestIssue16Selector is the failing case of issue 16: a > 5 over messages with a = 0..9
// matches 6, 7, 8 and 9 only.
func TestIssue16Selector(t *testing.T) {
	e, err := Parse("a > 5")
	require.NoError(t, err)
	var got []string
	for i := 0; i < 10; i++ {
		v := string(rune('0' + i))
		if e.MatchRaw(rawProps(P{"a": v, "TAGS": "*"})) {
			got = append(got, v)
		}
	}
	require.Equal(t, []string{"6", "7", "8", "9"}, got)
}
