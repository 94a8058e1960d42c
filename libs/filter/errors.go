package filter

import (
	"errors"
	"fmt"
)

var (
	// ErrParse is wrapped by every error Parse returns: a lexical error, a syntax error, an
	// operand RocketMQ refuses when it builds the expression (a string in '>', NULL in '=', a
	// number where a condition is needed, BETWEEN bounds in the wrong order), a numeric literal
	// out of range, and the limits below. The broker answers them with SUBSCRIPTION_PARSE_FAILED
	// for a selector a pull carries, FILTER_DATA_NOT_EXIST for one a heartbeat registered.
	ErrParse = errors.New("filter: invalid SQL92 expression")
	// ErrTooLong is returned (with ErrParse) for an expression longer than MaxLength bytes.
	ErrTooLong = errors.New("filter: expression too long")
	// ErrTooDeep is returned (with ErrParse) for an expression nested deeper than MaxDepth.
	ErrTooDeep = errors.New("filter: expression nested too deeply")
)

// ParseError is a failed Parse: where in the expression and what went wrong. errors.Is
// matches ErrParse for every ParseError, and ErrTooLong or ErrTooDeep for those limits.
type ParseError struct {
	// Offset is the byte offset in the expression where the problem starts.
	Offset int
	// Line and Column are 1-based; Column counts characters (runes), not bytes.
	Line, Column int
	// Msg says what is wrong, in words meant for the consumer's operator.
	Msg string

	limit error // ErrTooLong, ErrTooDeep or nil
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("invalid SQL92 expression at line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Unwrap lets errors.Is match ErrParse and, for the limits, ErrTooLong or ErrTooDeep.
func (e *ParseError) Unwrap() []error {
	if e.limit != nil {
		return []error{ErrParse, e.limit}
	}
	return []error{ErrParse}
}
