package filter

import (
	"math"
	"strconv"
	"strings"
)

// Limits on what Parse accepts. RocketMQ has none; these keep a hostile subscription from
// costing the broker unbounded memory, stack or time.
const (
	// MaxLength is the longest expression accepted, in bytes (64 KiB: room for an IN list of
	// a few thousand ids).
	MaxLength = 64 << 10
	// MaxDepth bounds nesting: parentheses plus prefix operators (NOT, '-', '+') open at any
	// point while parsing, and the height of the compiled tree (an AND or OR chain of any
	// length counts as one level). Parsing and evaluation recurse at most this deep.
	MaxDepth = 100
)

// Parse compiles a RocketMQ SQL92 selector (the subscription string of a consumer whose
// expressionType is SQL92). It accepts exactly what RocketMQ 5.x's SelectorParser accepts,
// including its quirks (see the package documentation), within MaxLength and MaxDepth.
func Parse(src string) (*Expr, error) {
	if len(src) > MaxLength {
		return nil, errorAt(src, MaxLength, "expression is "+strconv.Itoa(len(src))+" bytes, longer than the limit of "+strconv.Itoa(MaxLength), ErrTooLong)
	}
	p := &parser{lx: lexer{src: src}, e: &Expr{src: src}}
	root, ok := p.selector()
	if !ok {
		return nil, p.err
	}
	e := p.e
	e.root = root
	e.trailing = len(src)
	if t := p.peekTok(); t.kind != tEOF {
		e.trailing = t.start
	}
	if len(e.names) > inlineSlots {
		e.slotOf = make(map[string]int32, len(e.names))
		for i, n := range e.names {
			e.slotOf[n] = int32(i)
		}
	}
	return e, nil
}

// parser is a recursive-descent parser of RocketMQ's grammar, one function per production.
// It reads tokens when the grammar needs them, as RocketMQ's does: one token of lookahead, two
// where RocketMQ's grammar says LOOKAHEAD(2) (IS NULL, NOT BETWEEN, NOT IN, NOT CONTAINS, ...).
type parser struct {
	lx    lexer
	buf   [2]token
	nbuf  int
	e     *Expr
	err   *ParseError
	depth int
}

func (p *parser) fill(n int) bool {
	for p.nbuf < n {
		t, ok := p.lx.next()
		if !ok {
			if p.err == nil {
				p.err = p.lx.err
			}
			return false
		}
		p.buf[p.nbuf] = t
		p.nbuf++
	}
	return true
}

// peek returns the kind of the k-th next token (0 or 1); ok is false at a lexical error.
func (p *parser) peek(k int) (tokKind, bool) {
	if !p.fill(k + 1) {
		return tEOF, false
	}
	return p.buf[k].kind, true
}

// peekTok returns the next token after a successful parse (EOF at a lexical error: RocketMQ
// never reads it either).
func (p *parser) peekTok() token {
	if !p.fill(1) {
		return token{kind: tEOF}
	}
	return p.buf[0]
}

func (p *parser) take() token {
	t := p.buf[0]
	p.buf[0] = p.buf[1]
	p.nbuf--
	return t
}

// expect consumes a token of kind k or fails.
func (p *parser) expect(k tokKind, what string) (token, bool) {
	got, ok := p.peek(0)
	if !ok {
		return token{}, false
	}
	if got != k {
		return token{}, p.unexpected(what)
	}
	return p.take(), true
}

func (p *parser) unexpected(expected string) bool {
	t := p.buf[0]
	found := strconv.Quote(t.text)
	if t.kind == tEOF {
		found = "the end of the expression"
	}
	return p.fail(t.start, "found "+found+", expected "+expected)
}

func (p *parser) fail(at int, msg string) bool {
	if p.err == nil {
		p.err = errorAt(p.lx.src, at, msg, nil)
	}
	return false
}

func (p *parser) failLimit(at int, msg string, limit error) bool {
	if p.err == nil {
		p.err = errorAt(p.lx.src, at, msg, limit)
	}
	return false
}

// enter counts one level of parser recursion (a parenthesis or a prefix operator).
func (p *parser) enter(at int) bool {
	if p.depth++; p.depth > MaxDepth {
		return p.failLimit(at, "nesting deeper than "+strconv.Itoa(MaxDepth)+" levels", ErrTooDeep)
	}
	return true
}

// add appends a node, refusing trees higher than MaxDepth.
func (p *parser) add(n node, at int) (int32, bool) {
	n.height = 1
	for _, k := range append([]int32{n.a, n.b, n.c}, n.kids...) {
		if k >= 0 {
			n.height = max(n.height, p.e.nodes[k].height+1)
		}
	}
	if n.height > MaxDepth {
		return -1, p.failLimit(at, "expression nested deeper than "+strconv.Itoa(MaxDepth)+" levels", ErrTooDeep)
	}
	p.e.nodes = append(p.e.nodes, n)
	return int32(len(p.e.nodes) - 1), true
}

func mk(o op, a, b, c int32) node { return node{op: o, a: a, b: b, c: c} }

// selector = orExpr
func (p *parser) selector() (int32, bool) {
	at := p.peekStart()
	x, ok := p.orExpr()
	if !ok {
		return -1, false
	}
	return p.asBool(x, at)
}

func (p *parser) peekStart() int {
	if !p.fill(1) {
		return p.lx.pos
	}
	return p.buf[0].start
}

// orExpr = andExpr { OR andExpr }
func (p *parser) orExpr() (int32, bool) {
	return p.chain(tOr, opOr, p.andExpr)
}

// andExpr = equalityExpr { AND equalityExpr }
func (p *parser) andExpr() (int32, bool) {
	return p.chain(tAnd, opAnd, p.equalityExpr)
}

// chain parses a left-associative AND or OR chain. RocketMQ nests binary nodes; since
// AND and OR evaluate their operands left to right and stop at the first FALSE (TRUE), a
// flat list evaluates exactly like the nested form, with constant recursion depth.
func (p *parser) chain(t tokKind, o op, operand func() (int32, bool)) (int32, bool) {
	at := p.peekStart()
	left, ok := operand()
	if !ok {
		return -1, false
	}
	for {
		k, ok := p.peek(0)
		if !ok {
			return -1, false
		}
		if k != t {
			return left, true
		}
		p.take()
		rat := p.peekStart()
		right, ok := operand()
		if !ok {
			return -1, false
		}
		if left, ok = p.asBool(left, at); !ok {
			return -1, false
		}
		if right, ok = p.asBool(right, rat); !ok {
			return -1, false
		}
		if p.e.nodes[left].op != o {
			n := node{op: o, a: -1, b: -1, c: -1, kids: []int32{left}}
			if left, ok = p.add(n, at); !ok {
				return -1, false
			}
		}
		// The chain node is referenced by nothing else yet: extend it in place.
		ln := &p.e.nodes[left]
		if rn := &p.e.nodes[right]; rn.op == o {
			ln.kids = append(ln.kids, rn.kids...)
		} else {
			ln.kids = append(ln.kids, right)
		}
		ln.height = max(ln.height, p.e.nodes[right].height+1)
		if ln.height > MaxDepth {
			return -1, p.failLimit(at, "expression nested deeper than "+strconv.Itoa(MaxDepth)+" levels", ErrTooDeep)
		}
	}
}

// equalityExpr = comparisonExpr { "=" comparisonExpr | "<>" comparisonExpr | IS NULL | IS NOT NULL }
func (p *parser) equalityExpr() (int32, bool) {
	at := p.peekStart()
	left, ok := p.comparisonExpr()
	if !ok {
		return -1, false
	}
	for {
		k, ok := p.peek(0)
		if !ok {
			return -1, false
		}
		switch k {
		case tEq, tNe:
			opTok := p.take()
			right, ok := p.comparisonExpr()
			if !ok {
				return -1, false
			}
			if !p.checkEqualOperands(left, right, opTok.start) {
				return -1, false
			}
			o := opEq
			if k == tNe {
				o = opNe
			}
			if left, ok = p.add(mk(o, left, right, -1), at); !ok {
				return -1, false
			}
		case tIs:
			k2, ok := p.peek(1)
			if !ok {
				return -1, false
			}
			p.take()
			o := opIsNull
			if k2 != tNull {
				if _, ok := p.expect(tNot, "NULL or NOT NULL after IS"); !ok {
					return -1, false
				}
				o = opIsNotNull
			}
			if _, ok := p.expect(tNull, "NULL after IS NOT"); !ok {
				return -1, false
			}
			if left, ok = p.add(mk(o, left, -1, -1), at); !ok {
				return -1, false
			}
		default:
			return left, true
		}
	}
}

// comparisonExpr = unaryExpr { (">" | ">=" | "<" | "<=") unaryExpr
//
//	| [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//	| [NOT] BETWEEN unaryExpr AND unaryExpr
//	| [NOT] IN "(" string { "," string } ")" }
func (p *parser) comparisonExpr() (int32, bool) {
	at := p.peekStart()
	left, ok := p.unaryExpr()
	if !ok {
		return -1, false
	}
	for {
		k, ok := p.peek(0)
		if !ok {
			return -1, false
		}
		neg := false
		switch k {
		case tGt, tGe, tLt, tLe:
			opTok := p.take()
			right, ok := p.unaryExpr()
			if !ok {
				return -1, false
			}
			o := map[tokKind]op{tGt: opGt, tGe: opGe, tLt: opLt, tLe: opLe}[k]
			if left, ok = p.relational(o, left, right, at, opTok.start); !ok {
				return -1, false
			}
			continue
		case tNot:
			k2, ok := p.peek(1)
			if !ok {
				return -1, false
			}
			switch k2 {
			case tContains, tStartsWith, tEndsWith, tBetween, tIn:
			default:
				p.take()
				return -1, p.unexpected("BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT")
			}
			p.take()
			k, neg = k2, true
		case tContains, tStartsWith, tEndsWith, tBetween, tIn:
		default:
			return left, true
		}
		opTok := p.take()
		switch k {
		case tContains, tStartsWith, tEndsWith:
			lit, ok := p.expect(tString, "a string literal after "+opTok.kind.String())
			if !ok {
				return -1, false
			}
			n := mk(map[tokKind]op{tContains: opContains, tStartsWith: opStartsWith, tEndsWith: opEndsWith}[k], left, -1, -1)
			n.neg, n.lit = neg, lit.str
			if left, ok = p.add(n, at); !ok {
				return -1, false
			}
		case tBetween:
			if left, ok = p.between(left, neg, at, opTok.start); !ok {
				return -1, false
			}
		case tIn:
			if left, ok = p.in(left, neg, at); !ok {
				return -1, false
			}
		}
	}
}

// between parses the bounds of [NOT] BETWEEN. RocketMQ builds BETWEEN as a >= low AND a <=
// high and NOT BETWEEN as a < low OR a > high, checking each comparison's operands; for
// BETWEEN it also refuses two constant bounds with high < low.
func (p *parser) between(left int32, neg bool, at, opAt int) (int32, bool) {
	lo, ok := p.unaryExpr()
	if !ok {
		return -1, false
	}
	if _, ok := p.expect(tAnd, "AND between the bounds of BETWEEN"); !ok {
		return -1, false
	}
	hi, ok := p.unaryExpr()
	if !ok {
		return -1, false
	}
	ln, hn := &p.e.nodes[lo], &p.e.nodes[hi]
	if !neg && ln.op == opConst && hn.op == opConst {
		if ln.val.k == kNull || hn.val.k == kNull {
			return -1, p.fail(opAt, "the bounds of BETWEEN cannot be NULL")
		}
		c, ok := compare(hn.val, ln.val)
		if !ok {
			return -1, p.fail(opAt, "the bounds of BETWEEN, "+p.text(lo)+" and "+p.text(hi)+", cannot be compared")
		}
		if c < 0 {
			return -1, p.fail(opAt, "the lower bound of BETWEEN, "+p.text(lo)+", is greater than the upper bound, "+p.text(hi))
		}
	}
	sym := "BETWEEN"
	if neg {
		sym = "NOT BETWEEN"
	}
	for _, i := range []int32{left, lo, hi} {
		if !p.checkRelOperand(i, opAt, sym) {
			return -1, false
		}
	}
	o := opBetween
	if neg {
		o = opNotBetween
	}
	return p.add(mk(o, left, lo, hi), at)
}

// in parses the string list of [NOT] IN; its left side must be a property name.
func (p *parser) in(left int32, neg bool, at int) (int32, bool) {
	if _, ok := p.expect(tLParen, "'(' after IN"); !ok {
		return -1, false
	}
	var list []string
	for {
		s, ok := p.expect(tString, "a string literal in the IN list")
		if !ok {
			return -1, false
		}
		list = append(list, s.str)
		k, ok := p.peek(0)
		if !ok {
			return -1, false
		}
		if k != tComma {
			break
		}
		p.take()
	}
	if _, ok := p.expect(tRParen, "',' or ')' in the IN list"); !ok {
		return -1, false
	}
	if p.e.nodes[left].op != opProp {
		return -1, p.fail(at, "IN needs a property name on its left, got "+p.text(left))
	}
	n := mk(opIn, left, -1, -1)
	n.neg, n.list = neg, list
	if len(list) >= inSetMin {
		n.set = make(map[string]struct{}, len(list))
		for _, s := range list {
			n.set[s] = struct{}{}
		}
	}
	return p.add(n, at)
}

// unaryExpr = "+" unaryExpr | "-" unaryExpr | NOT unaryExpr | primaryExpr
func (p *parser) unaryExpr() (int32, bool) {
	k, ok := p.peek(0)
	if !ok {
		return -1, false
	}
	switch k {
	case tPlus, tMinus, tNot:
		t := p.take()
		if !p.enter(t.start) {
			return -1, false
		}
		at := p.peekStart()
		x, ok := p.unaryExpr()
		p.depth--
		if !ok {
			return -1, false
		}
		switch k {
		case tPlus:
			return x, true // unary plus is the operand itself
		case tMinus:
			return p.add(mk(opNeg, x, -1, -1), t.start)
		default:
			if x, ok = p.asBool(x, at); !ok {
				return -1, false
			}
			return p.add(mk(opNot, x, -1, -1), t.start)
		}
	}
	return p.primaryExpr()
}

// primaryExpr = literal | ID | "(" orExpr ")"
func (p *parser) primaryExpr() (int32, bool) {
	if _, ok := p.peek(0); !ok {
		return -1, false
	}
	t := p.buf[0]
	switch t.kind {
	case tLParen:
		p.take()
		if !p.enter(t.start) {
			return -1, false
		}
		x, ok := p.orExpr()
		p.depth--
		if !ok {
			return -1, false
		}
		if _, ok := p.expect(tRParen, "')'"); !ok {
			return -1, false
		}
		return x, true // parentheses only group: RocketMQ returns the inner expression
	case tID:
		p.take()
		n := mk(opProp, -1, -1, -1)
		n.slot = p.slotFor(t.text)
		return p.add(n, t.start)
	case tString:
		p.take()
		return p.constant(value{k: kString, s: t.str}, t.start)
	case tTrue, tFalse, tNull:
		p.take()
		v := map[tokKind]value{tTrue: vTrue, tFalse: vFalse, tNull: vNull}[t.kind]
		return p.constant(v, t.start)
	case tDecimal:
		p.take()
		// ConstantExpression.createFromDecimal: a trailing l/L is dropped; Long.parseLong
		// range; Integer when the value fits an int.
		digits := strings.TrimRight(t.text, "lL")
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return -1, p.fail(t.start, "integer literal "+t.text+" is out of the range of a 64-bit long")
		}
		v := value{k: kLong, n: n}
		if n >= math.MinInt32 && n <= math.MaxInt32 {
			v.k = kInt
		}
		return p.constant(v, t.start)
	case tFloat:
		p.take()
		// ConstantExpression.createFloat: Double.valueOf; refused above Double.MAX_VALUE
		// (infinity) and below Double.MIN_VALUE, the smallest positive double, so 0.0 too.
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil && !isRangeErr(err) {
			return -1, p.fail(t.start, "invalid floating-point literal "+t.text)
		}
		if math.IsInf(f, 0) {
			return -1, p.fail(t.start, "floating-point literal "+abbrev(t.text)+" is greater than the largest double")
		}
		if f < math.SmallestNonzeroFloat64 {
			return -1, p.fail(t.start, "floating-point literal "+abbrev(t.text)+" is less than the smallest positive double (RocketMQ refuses 0.0; write 0)")
		}
		return p.constant(value{k: kDouble, f: f}, t.start)
	}
	return -1, p.unexpected("a literal, a property name, '(', NOT, '-' or '+'")
}

func abbrev(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

func (p *parser) constant(v value, at int) (int32, bool) {
	n := mk(opConst, -1, -1, -1)
	n.val = v
	return p.add(n, at)
}

func (p *parser) slotFor(name string) int32 {
	for i, n := range p.e.names {
		if n == name {
			return int32(i)
		}
	}
	p.e.names = append(p.e.names, name)
	return int32(len(p.e.names) - 1)
}

// isBoolExpr reports whether node i is one of RocketMQ's BooleanExpressions: the constants
// TRUE, FALSE and NULL and every comparison, logic, IN, CONTAINS-family, NOT and cast node.
// Numbers, strings, properties and negations are not.
func (p *parser) isBoolExpr(i int32) bool {
	n := &p.e.nodes[i]
	switch n.op {
	case opConst:
		return n.val.k == kBool || n.val.k == kNull
	case opProp, opNeg:
		return false
	}
	return true
}

// asBool is SelectorParser.asBooleanExpression: a condition stays as it is, a property is
// cast (true only if its value is a Boolean, which a message property never is), anything
// else is refused.
func (p *parser) asBool(i int32, at int) (int32, bool) {
	if p.isBoolExpr(i) {
		return i, true
	}
	if p.e.nodes[i].op == opProp {
		return p.add(mk(opCast, i, -1, -1), at)
	}
	return -1, p.fail(at, "expression will not result in a boolean value: "+p.text(i))
}

// relational builds >, >=, < or <= after checking both operands as RocketMQ does.
func (p *parser) relational(o op, left, right int32, at, opAt int) (int32, bool) {
	sym := map[op]string{opGt: ">", opGe: ">=", opLt: "<", opLe: "<="}[o]
	if !p.checkRelOperand(left, opAt, sym) || !p.checkRelOperand(right, opAt, sym) {
		return -1, false
	}
	return p.add(mk(o, left, right, -1), at)
}

// checkRelOperand is ComparisonExpression.checkLessThanOperand: a constant must be a number,
// and no condition may be compared with >, >=, < or <=.
func (p *parser) checkRelOperand(i int32, at int, sym string) bool {
	n := &p.e.nodes[i]
	if n.op == opConst && !n.val.isNumber() || n.op != opConst && p.isBoolExpr(i) {
		return p.fail(at, "value "+p.text(i)+" cannot be compared with "+sym+" (only numbers can)")
	}
	return true
}

// checkEqualOperands is checkEqualOperand on both sides (the NULL literal cannot be compared:
// use IS NULL) and checkEqualOperandCompatability (TRUE or FALSE on the left of '=' cannot
// face a string or number literal on the right).
func (p *parser) checkEqualOperands(l, r int32, at int) bool {
	ln, rn := &p.e.nodes[l], &p.e.nodes[r]
	for _, n := range []*node{ln, rn} {
		if n.op == opConst && n.val.k == kNull {
			return p.fail(at, "NULL cannot be compared with '=' or '<>' (use IS NULL or IS NOT NULL)")
		}
	}
	if ln.op == opConst && rn.op == opConst && ln.val.k == kBool && rn.val.k != kBool {
		return p.fail(at, p.text(l)+" cannot be compared with "+p.text(r))
	}
	return true
}

// text prints node i for an error message.
func (p *parser) text(i int32) string {
	return abbrev((&Expr{nodes: p.e.nodes, names: p.e.names, root: i}).String())
}
