package metasync

import "errors"

var (
	// ErrInvalidConfig is returned by the Validate methods; the message names the field.
	ErrInvalidConfig = errors.New("metasync: invalid config")
	// ErrUnknownTable is returned for a table name outside AllTables.
	ErrUnknownTable = errors.New("metasync: unknown table")
	// ErrInvalidName is returned for an empty cluster or broker name, or one a
	// subject or a snapshot path cannot carry.
	ErrInvalidName = errors.New("metasync: invalid cluster or broker name")
	// ErrInvalidSubject is returned by ParseSubject for a subject outside the hierarchy.
	ErrInvalidSubject = errors.New("metasync: invalid subject")
	// ErrInvalidAnnouncement is returned when an announcement cannot be decoded
	// or lacks a required field.
	ErrInvalidAnnouncement = errors.New("metasync: invalid announcement")
	// ErrInvalidSnapshot is returned when a snapshot envelope or a master's
	// table body cannot be decoded or fails validation.
	ErrInvalidSnapshot = errors.New("metasync: invalid snapshot")
	// ErrNoSnapshot is returned by a snapshot source that holds nothing for
	// the requested broker and table (HTTP 404).
	ErrNoSnapshot = errors.New("metasync: no snapshot held")
	// ErrNotOwner is returned by a snapshot source that does not currently sync
	// the requested broker group (HTTP 503 from an instance without its lock).
	ErrNotOwner = errors.New("metasync: instance does not own the broker group")
	// ErrUnavailable is returned when no snapshot source or master could be
	// reached (every URL failed, no master address, no bus).
	ErrUnavailable = errors.New("metasync: source unavailable")
	// ErrMasterRefused is returned when the master answers a GET_ALL_* request
	// with a non-success code.
	ErrMasterRefused = errors.New("metasync: master refused the request")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("metasync: closed")
)
