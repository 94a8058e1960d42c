package filter

import (
	"strconv"
	"strings"
)

// op is a node of a compiled expression. Each corresponds to one of RocketMQ's expression
// classes (named beside it), so evaluation can follow them step by step.
type op uint8

const (
	opConst      op = iota // ConstantExpression / BooleanConstantExpression: val
	opProp                 // PropertyExpression: slot
	opCast                 // UnaryExpression.createBooleanCast(a): a property used as a condition
	opNot                  // UnaryExpression.createNOT(a)
	opNeg                  // UnaryExpression.createNegate(a)
	opAnd                  // LogicExpression.createAND, chains flattened: kids
	opOr                   // LogicExpression.createOR, chains flattened: kids
	opEq                   // ComparisonExpression.createEqual(a, b)
	opNe                   // createNotEqual: NOT (a = b)
	opIsNull               // createIsNull(a)
	opIsNotNull            // createIsNotNull(a): NOT (a IS NULL)
	opGt                   // createGreaterThan(a, b)
	opGe                   // createGreaterThanEqual(a, b)
	opLt                   // createLessThan(a, b)
	opLe                   // createLessThanEqual(a, b)
	opBetween              // createBetween(a, b, c): a >= b AND a <= c
	opNotBetween           // createNotBetween(a, b, c): a < b OR a > c
	opIn                   // createInFilter / createNotInFilter(a, list), neg for NOT IN
	opContains             // ContainsExpression / NotContainsExpression(a, lit), neg for NOT
	opStartsWith           // StartsWithExpression / NotStartsWithExpression
	opEndsWith             // EndsWithExpression / NotEndsWithExpression
)

type node struct {
	op      op
	neg     bool  // NOT IN, NOT CONTAINS, NOT STARTSWITH, NOT ENDSWITH
	a, b, c int32 // operands (index into Expr.nodes)
	kids    []int32
	val     value  // opConst
	slot    int32  // opProp: index into Expr.names
	lit     string // CONTAINS family: the searched string
	list    []string
	set     map[string]struct{} // IN with more than inSetMin strings
	height  int32
}

// inSetMin is the IN list length from which membership is a map lookup rather than a scan.
const inSetMin = 5

// Expr is a compiled SQL92 selector. It is immutable and safe for concurrent use.
type Expr struct {
	src      string
	nodes    []node
	root     int32
	names    []string         // distinct property names, in order of first reference
	slotOf   map[string]int32 // name → slot, when there are more than inlineSlots names
	trailing int              // offset of text RocketMQ's parser ignores, len(src) if none
}

// Source returns the expression as it was given to Parse.
func (e *Expr) Source() string { return e.src }

// Properties returns the distinct property names the expression reads, in order of first
// reference. The caller must not modify the slice.
func (e *Expr) Properties() []string { return e.names }

// Trailing returns the text after the longest complete expression at the start of the
// source, which RocketMQ's parser accepts and ignores ("a > 5 b" is "a > 5"). It is ""
// for a well-formed selector; a broker may log the rest, since a typo there ("a > 5 ANDD
// b < 3") silently widens the subscription, on RocketMQ as here.
func (e *Expr) Trailing() string { return strings.TrimSpace(e.src[e.trailing:]) }

// String returns the expression in a canonical form that Parse turns back into the same
// expression: keywords upper case, compound operands in parentheses, AND and OR chains flat.
func (e *Expr) String() string {
	var b strings.Builder
	e.print(&b, e.root, 0)
	return b.String()
}

// level is the precedence level of node i as printed: 6 literals and names, 5 prefix
// operators, 4 and 3 comparisons, 2 AND, 1 OR.
func (e *Expr) level(i int32) int {
	switch e.nodes[i].op {
	case opConst, opProp, opCast:
		return 6
	case opNot, opNeg:
		return 5
	case opAnd:
		return 2
	case opOr:
		return 1
	}
	return 3
}

// print writes node i, in parentheses when its level is below min. Chain operands need a
// comparison or tighter (an AND inside an OR is parenthesised for the reader), comparison
// operands a prefix operator or tighter. At most one parenthesis or prefix operator is written
// per node, so the text nests no deeper than the tree is high and the round trip stays within
// MaxDepth.
func (e *Expr) print(b *strings.Builder, i int32, min int) {
	n := &e.nodes[i]
	if e.level(i) < min {
		b.WriteByte('(')
		defer b.WriteByte(')')
	}
	operand := func(j int32) { e.print(b, j, 5) }
	binary := func(sym string) {
		operand(n.a)
		b.WriteString(sym)
		operand(n.b)
	}
	switch n.op {
	case opConst:
		b.WriteString(formatValue(n.val))
	case opProp:
		b.WriteString(e.names[n.slot])
	case opCast:
		e.print(b, n.a, min)
	case opNot:
		b.WriteString("NOT ")
		operand(n.a)
	case opNeg:
		var sub strings.Builder
		e.print(&sub, n.a, 5)
		b.WriteByte('-')
		if strings.HasPrefix(sub.String(), "-") {
			b.WriteByte(' ') // "--" would start a comment
		}
		b.WriteString(sub.String())
	case opAnd, opOr:
		sym := " AND "
		if n.op == opOr {
			sym = " OR "
		}
		for k, kid := range n.kids {
			if k > 0 {
				b.WriteString(sym)
			}
			e.print(b, kid, 3)
		}
	case opEq:
		binary(" = ")
	case opNe:
		binary(" <> ")
	case opIsNull:
		operand(n.a)
		b.WriteString(" IS NULL")
	case opIsNotNull:
		operand(n.a)
		b.WriteString(" IS NOT NULL")
	case opGt:
		binary(" > ")
	case opGe:
		binary(" >= ")
	case opLt:
		binary(" < ")
	case opLe:
		binary(" <= ")
	case opBetween, opNotBetween:
		operand(n.a)
		if n.op == opNotBetween {
			b.WriteString(" NOT")
		}
		b.WriteString(" BETWEEN ")
		operand(n.b)
		b.WriteString(" AND ")
		operand(n.c)
	case opIn:
		operand(n.a)
		if n.neg {
			b.WriteString(" NOT")
		}
		b.WriteString(" IN (")
		for k, s := range n.list {
			if k > 0 {
				b.WriteString(", ")
			}
			b.WriteString(quoteString(s))
		}
		b.WriteByte(')')
	case opContains, opStartsWith, opEndsWith:
		operand(n.a)
		if n.neg {
			b.WriteString(" NOT")
		}
		switch n.op {
		case opContains:
			b.WriteString(" CONTAINS ")
		case opStartsWith:
			b.WriteString(" STARTSWITH ")
		default:
			b.WriteString(" ENDSWITH ")
		}
		b.WriteString(quoteString(n.lit))
	}
}

// formatValue writes a constant so that it lexes back to the same literal and class.
func formatValue(v value) string {
	switch v.k {
	case kNull:
		return "NULL"
	case kBool:
		if v.n != 0 {
			return "TRUE"
		}
		return "FALSE"
	case kInt, kLong:
		return strconv.FormatInt(v.n, 10)
	case kDouble:
		s := strconv.FormatFloat(v.f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	case kString:
		return quoteString(v.s)
	}
	return "?"
}

func quoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
