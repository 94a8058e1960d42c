package brokerstats

import "errors"

var (
	// ErrInvalidConfig is returned by Config.Validate and New; the message names the field.
	ErrInvalidConfig = errors.New("brokerstats: invalid config")
)
