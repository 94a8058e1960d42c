// Package remoting implements RocketMQ's remoting protocol: the TCP frame codec, the request
// and response code tables, a pipelined Server and a pipelined Client. It is wire-compatible
// with rocketmq-client-go v2 and with Java RocketMQ peers.
//
// # Frame
//
// All integers are big-endian.
//
//	 0               4               8
//	+---------------+-+-------------+------------------------+----------------+
//	| length uint32 |T| headerLen   | header (headerLen B)   | body           |
//	+---------------+-+-------------+------------------------+----------------+
//	                 ^ serialize type byte: 0 JSON, 1 ROCKETMQ binary
//	                   headerLen: 24-bit unsigned
//	length = 4 + headerLen + len(body); it does not count itself.
//
// The JSON header carries, in this order when encoded here:
//
//	{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}
//
// extFields values are always JSON strings on output; on input numbers and booleans are
// accepted and turned into their text, null values are dropped and unknown keys ignored.
// Flag bit 0 marks a response, bit 1 a oneway request. A response echoes its request's
// opaque, which is the only thing callers match on.
//
// The ROCKETMQ binary header (decoded here, and encoded by AppendBinaryFrame) is:
//
//	code int16 | language byte | version int16 | opaque int32 | flag int32 |
//	remarkLen int32 | remark | extLen int32 | { keyLen int16 | key | valLen int32 | value }*
//
// # Server
//
// A Server reads frames on one goroutine per connection and runs every request on its own
// goroutine (at most ServerConfig.MaxInflightPerConn per connection, past which requests are
// answered SYSTEM_BUSY), so answers go out in completion order. A single writer goroutine per
// connection drains a queue of encoded frames and writes everything queued in one call,
// which coalesces concurrent answers. A handler that never writes leaves its request
// unanswered (oneway). Unknown codes get REQUEST_CODE_NOT_SUPPORTED; undecodable headers get
// SYSTEM_ERROR when the opaque can be recovered, otherwise the connection is closed, as it is
// for frames above MaxFrameSize. Handler panics become SYSTEM_ERROR answers.
//
// # Transport and bounds
//
// A server serves plain and TLS clients by RocketMQ's three modes, told apart by the first
// byte (tls.go). Its resources are bounded (reader.go, keys.go): connections per listener
// (MaxConnections, refused at accept), read buffers that grow only as bytes arrive (4 KiB per
// idle connection, never sized from a peer's length prefix), a server-wide budget of bytes in
// flight (MaxBytesInFlight: grown buffers plus requests not yet answered; beyond it
// SYSTEM_BUSY "[OVERLOAD]..." with the body read and discarded, keeping the stream in sync),
// and a deadline per frame (FrameTimeout) against peers that dribble. Counters for all of it:
// Server.Stats. After a burst the memory goes back to the operating system (memory.go).
//
// # Client
//
// A Client holds one connection per address (TLS when ClientConfig.TLS is set), dialled on
// first use and shared by all calls;
// calls are matched to responses by opaque, carry a deadline (the context's or
// RequestTimeout), and fail together when their connection breaks. Server-initiated requests
// (NOTIFY_CONSUMER_IDS_CHANGED and friends) go to handlers registered with HandleRequest.
// Invoke and InvokeExt wait for the answer in the caller's goroutine; InvokeAsync returns once
// the request is queued and hands the answer to a Callback on the connection's reader, with
// no goroutine, channel or timer per call, for callers that keep many calls in flight
// (async.go). While the reader handles the frames it holds, the writer is corked; on a plain
// TCP connection the reader then writes what they queued itself, in one non-blocking write
// (link.go), and a lone Invoke on an idle connection writes its own request. A client
// connection reads into 64 KiB (a window's answers in one read), and on plain TCP its reads
// and its own writes are raw system calls that leave the scheduler's monitor asleep
// (quietsock.go).
package remoting
