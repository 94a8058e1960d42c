package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/rmqha/rmqha/libs/remoting"
)

// Exit codes of the command. Scripts rely on them, so they never change meaning.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitServer: a name server or broker answered with an error (or an unusable body).
	ExitServer = 1
	// ExitUsage: the command line is wrong (unknown command, missing or bad flag).
	ExitUsage = 2
	// ExitUnreachable: a name server or broker could not be reached in time.
	ExitUnreachable = 3
)

var (
	// ErrUsage is returned when the command line is wrong; it maps to ExitUsage.
	ErrUsage = errors.New("usage")
	// ErrServer is returned when a server answered a request with a non-success code, or with
	// a body that does not decode; it maps to ExitServer.
	ErrServer = errors.New("server error")
	// ErrUnreachable is returned when no connection could be made or no answer came in time;
	// it maps to ExitUnreachable.
	ErrUnreachable = errors.New("unreachable")
	// ErrNotFound is returned when the thing asked about (topic, group, broker) is unknown to
	// every server asked; it maps to ExitServer.
	ErrNotFound = errors.New("not found")
)

// serverError is a non-success response.
type serverError struct {
	addr   string
	code   int32
	remark string
}

func (e *serverError) Error() string {
	return fmt.Sprintf("%s answered %s (%d): %s", e.addr, remoting.ResponseName(e.code), e.code, e.remark)
}

func (e *serverError) Unwrap() error { return ErrServer }

// classify maps a transport error to ErrUnreachable, leaving other errors alone.
func classify(addr string, err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.Is(err, remoting.ErrConnFailed) || errors.Is(err, remoting.ErrTimeout) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, addr, err)
	}
	return err
}

// exitCode maps an error to the command's exit code.
func exitCode(err error) int {
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, ErrUsage):
		return ExitUsage
	case errors.Is(err, ErrUnreachable):
		return ExitUnreachable
	default:
		return ExitServer
	}
}

// worst combines the errors of independent operations: the result carries the most severe
// exit code (unreachable over server error) and every message.
func worst(errs ...error) error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	j := errors.Join(out...)
	for _, e := range out {
		if errors.Is(e, ErrUnreachable) {
			return fmt.Errorf("%w: %w", ErrUnreachable, j)
		}
	}
	return j
}
