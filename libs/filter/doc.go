// Package filter is RocketMQ's SQL92 message filter: the selector language of consumers that
// subscribe with expressionType SQL92 (MessageSelector.bySql in Java, consumer.SQL92 in
// rocketmq-client-go), parsed once into an Expr and evaluated per message against its
// properties, with RocketMQ 5.x's results: the same inputs parse or fail, and every message
// matches or not exactly as on a RocketMQ broker with enablePropertyFilter=true.
//
//	e, err := filter.Parse("a > 5 AND b = 'x'")   // err wraps ErrParse: the pull is refused
//	e.MatchRaw(storedPropertiesSection)            // per message on pull, allocation-free
//	e.MatchMap(map[string]string{"a": "7", "b": "x"})
//
// The package has no I/O and no dependencies on the rest of the repository.
//
// # What a selector can read
//
// Only the message's properties, by exact (case-sensitive) name: the user properties and the
// system properties stored with them, of which TAGS (the message tag), KEYS, UNIQ_KEY and, for
// retried messages, RETRY_TOPIC are the useful ones. Every value is a string; a property that
// is not set is NULL. The topic, queue, offsets, body and timestamps are not visible.
//
// # Grammar
//
// Keywords are case-insensitive; names are case-sensitive ASCII. White space is space, tab,
// CR, LF and form feed; comments are /* ... */ and -- up to the end of a line (a "--" with no
// line end after it is two minus signs).
//
//	selector   = orExpr .                               (see "Accepted prefix" below)
//	orExpr     = andExpr { OR andExpr } .
//	andExpr    = eqExpr { AND eqExpr } .
//	eqExpr     = cmpExpr { ( "=" | "<>" ) cmpExpr | IS NULL | IS NOT NULL } .
//	cmpExpr    = unary { ( ">" | ">=" | "<" | "<=" ) unary
//	                   | [ NOT ] ( CONTAINS | STARTSWITH | ENDSWITH ) string
//	                   | [ NOT ] BETWEEN unary AND unary
//	                   | [ NOT ] IN "(" string { "," string } ")" } .
//	unary      = "+" unary | "-" unary | NOT unary | primary .
//	primary    = literal | name | "(" orExpr ")" .
//	literal    = string | decimal | float | TRUE | FALSE | NULL .
//	name       = ( letter | "_" | "$" ) { letter | digit | "_" | "$" } .  (not a keyword)
//	string     = "'" { "''" | any character but "'" } "'" .       ('' is one quote)
//	decimal    = "0" | nzdigit { digit } [ "l" | "L" ] .
//	float      = digit { digit } "." { digit } [ exp ] | "." digit { digit } [ exp ]
//	           | digit { digit } exp .
//	exp        = ( "e" | "E" ) [ "+" | "-" ] digit { digit } .
//
// Tokens are the longest match, so "007" is three literals, "0L" is 0 followed by the name L,
// "1e" is 1 and e, and "a>=5" is a, >=, 5. There are no hexadecimal or octal literals, no
// LIKE, no arithmetic, no "!=" and no double-quoted strings.
//
// Literals: a decimal is an Integer when it fits 32 bits, else a Long; past 64 bits it is a
// parse error (the L suffix changes nothing). A float is a Double and must lie between the
// smallest positive double and the largest: 0.0, 0e5 and 1e400 are parse errors (write 0).
// A negative number is the minus operator applied to a literal.
//
// # Precedence
//
// From loosest to tightest; binary operators associate to the left.
//
//	1  OR
//	2  AND
//	3  =  <>  IS NULL  IS NOT NULL
//	4  >  >=  <  <=  [NOT] BETWEEN  [NOT] IN  [NOT] CONTAINS  [NOT] STARTSWITH  [NOT] ENDSWITH
//	5  unary + - NOT
//
// NOT binds tighter than the comparisons: "NOT a = 5" is "(NOT a) = 5", which never matches;
// write "NOT (a = 5)" or "a <> 5".
//
// # Checks when parsing
//
// RocketMQ refuses, and so does Parse: a string, TRUE, FALSE, NULL or any condition as an
// operand of >, >=, <, <= or BETWEEN; the NULL literal as an operand of = or <>; TRUE or FALSE
// left of = or <> with a string or number literal right of it; a number, a string or a
// negation where a condition is needed (as an operand of AND, OR or NOT, or as the whole
// selector; a bare property is accepted there, see below); anything but a property name left
// of IN; BETWEEN with two literal bounds, low above high (NOT BETWEEN is not checked).
//
// # Evaluation rules
//
// Values are Java's: NULL, TRUE/FALSE, Integer, Long, Double, String (every property). A
// comparison converts a String facing a number by parsing it as that number's class:
// Integer.parseInt against an Integer literal (so "3000000000" or "7.5" against 5 does not
// parse), Long.parseLong against a Long literal, Double.valueOf against a Double literal;
// integer parsing takes an optional sign and decimal digits (any Unicode decimal digit),
// nothing else; Double.valueOf also accepts surrounding white space, NaN, Infinity, 1e3,
// hexadecimal 0x1p3 and a final f, F, d or D. Integer, Long and Double widen among themselves.
// A String facing TRUE/FALSE is true when it is "true" in any case. "Error" below means RocketMQ
// throws: the whole evaluation stops and the message does not match, even inside an OR whose
// other side is true (AND and OR stop at their first deciding operand, left to right, so only
// what is evaluated can fail). A missing property is NULL; NULL is not a match.
//
//	x = y         x, y NULL: TRUE; x NULL: NULL; y NULL: FALSE ('a' = b is FALSE, not NULL,
//	              when b is missing). Two strings: equal text ('10' = '10.0' is FALSE). A string
//	              and a number: converted as above, unparsable is an error. A string and
//	              TRUE/FALSE: "true" (any case) is TRUE, anything else FALSE. TRUE/FALSE left
//	              of a property: error (RocketMQ casts the Boolean to String). Number classes
//	              widen (5 = 5.0 is TRUE). Other mixes (5 = TRUE, (a > 1) = 1): FALSE.
//	x <> y        NOT (x = y): NULL stays NULL; 'a' <> b with b missing is TRUE.
//	x IS NULL     TRUE when x is NULL, else FALSE. Never NULL.
//	x IS NOT NULL The opposite. Never NULL.
//	x > y (>=,    NULL if x or y is NULL (y is not evaluated when x is). Two strings (two
//	  <, <=)      properties): both parsed with Double.valueOf, error if either fails. A string
//	              and a number: converted as for =, error if unparsable. No string order:
//	              string literals are refused when parsing. Doubles order as Double.compare:
//	              -0.0 < 0.0, NaN above +Infinity ("NaN" > 5.0 is TRUE).
//	x BETWEEN l   x >= l AND x <= h: both bounds included; NULL if x is missing.
//	  AND h
//	x NOT BETWEEN x < l OR x > h: NULL if x is missing.
//	  l AND h
//	x IN (...)    x is a property. NULL if missing. TRUE if its value equals one of the
//	              strings, byte for byte (no numeric conversion: a IN ('5') is FALSE for 5.0).
//	x NOT IN (...) NULL if missing, else the opposite of IN.
//	x CONTAINS s  FALSE if s is '' or x is missing or not a string (NOT CONTAINS too: a
//	  (STARTSWITH,missing property is FALSE for both forms, so NOT (a CONTAINS 'x') is TRUE
//	  ENDSWITH)   when a is missing). Case-sensitive substring, prefix, suffix.
//	NOT x         TRUE↔FALSE, NULL stays NULL.
//	x AND y       FALSE if either is FALSE, else NULL if either is NULL, else TRUE.
//	x OR y        TRUE if either is TRUE, else NULL if either is NULL, else FALSE.
//	-x            A number negated; NULL for anything else (-a is NULL for every property).
//	a (a name     As a condition: NULL if missing, FALSE if present (it would need a Boolean
//	  alone)      value, which properties never have); so "NOT a" is TRUE when a is set.
//
// # Accepted prefix
//
// RocketMQ's parser stops at the end of the longest expression at the start of the text and
// ignores the rest without reading it: "a > 5 b", "a > 5)" and "a > 5 ANDD b" all mean
// "a > 5". Only the token right after the expression is read, so a lexical error there ("a >
// 5 #") still fails, and a token that continues the expression (an operator, AND, OR, NOT,
// IS, BETWEEN, IN, CONTAINS, ...) is parsed as such and must be followed correctly ("a > 5
// NOT b" fails). Parse does the same and Expr.Trailing returns the ignored text.
//
// # Differences from RocketMQ 4.9
//
// RocketMQ 5.1.3 made CONTAINS, STARTSWITH and ENDSWITH keywords; on 4.9 they are names, so
// 4.9 parses "contains = 'x'" (a property named contains) and reads "a CONTAINS 'x'" as "a"
// followed by ignored text. This package follows 5.x. Everything else above is the same in
// 4.9.8 and 5.3.
//
// # Limits
//
// A selector is at most MaxLength (65536) bytes; parentheses and prefix operators nest at most
// MaxDepth (100) deep and the compiled tree is at most MaxDepth high (an AND or OR chain of
// any length counts once), so neither parsing nor evaluation recurses further. Errors past the
// limits wrap ErrTooLong or ErrTooDeep besides ErrParse. EvalRaw reads each property at most
// once per message in one pass over the properties, so a message costs O(properties length +
// expression size) whatever the selector; it allocates nothing for up to 16 distinct property
// names (more use a pooled buffer).
package filter
