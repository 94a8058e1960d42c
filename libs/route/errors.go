package route

import "errors"

var (
	// ErrSyntax is returned by Lenient and the DecodeX functions when the input
	// is not JSON even after quoting bare integer keys.
	ErrSyntax = errors.New("route: malformed JSON")
	// ErrBrokerAddrKey is returned when a brokerAddrs key is not a decimal
	// broker id.
	ErrBrokerAddrKey = errors.New("route: brokerAddrs key is not an integer broker id")
	// ErrBodyCRC is returned by CheckBodyCRC32 when a non-zero bodyCrc32 does not
	// match the body.
	ErrBodyCRC = errors.New("route: body crc32 mismatch")
)
