package broker

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// frameWriter answers like the server's writer does (the response encoded into a reused write
// queue), without a socket.
type frameWriter struct {
	buf []byte
	n   int
}

func (w *frameWriter) Write(resp *remoting.Command) error {
	resp.Flag |= remoting.FlagResponse
	w.buf = remoting.AppendFrame(w.buf[:0], resp)
	w.n++
	return nil
}

func (w *frameWriter) Conn() *remoting.ServerConn { return nil }

// sendFrame is a 1 KiB send as a client puts it on the wire: SEND_MESSAGE with Java's long
// names (the raw bench producer's) or SEND_MESSAGE_V2 with the short names
// rocketmq-client-go sends.
func sendFrame(tb testing.TB, code int32, topic string) []byte {
	ext := sendExt(topic, 0, props("UNIQ_KEY", "7F0000010001000000000000000A", "TAGS", "a", "WAIT", "true"))
	if code == remoting.SendMessageV2 {
		short := make(map[string]string, len(ext))
		for s, long := range v2Names {
			if v, ok := ext[long]; ok {
				short[s] = v
			}
		}
		ext = short
	}
	req := remoting.NewRequest(code, ext, make([]byte, 1024))
	req.Opaque = 7
	frame, err := remoting.EncodeFrame(nil, req)
	require.NoError(tb, err)
	return frame[4:] // what the frame reader hands on: the bytes after the length prefix
}

// BenchmarkSendPath is the master's work for one ASYNC send from request bytes to response
// bytes: decoding the frame, the send handler (header, properties, topic, store append) and
// encoding the answer, with allocations reported per message. The same-run baseline is the
// store append alone of the same message (ratio_to_append: how much the request handling
// adds to the storage work it cannot avoid).
func BenchmarkSendPath(b *testing.B) {
	for _, code := range []int32{remoting.SendMessage, remoting.SendMessageV2} {
		b.Run(remoting.RequestName(code), func(b *testing.B) {
			cfg := testConfig(b)
			cfg.MappedFileSizeCommitLog = 256 << 20
			br := startBroker(b, cfg)
			frame := sendFrame(b, code, "BenchPath")
			w := &frameWriter{}
			serve := func() {
				req, err := remoting.DecodeFrame(frame)
				if err != nil {
					b.Fatal(err)
				}
				br.handleSend(w, req)
			}
			serve() // creates the topic
			req, err := remoting.DecodeFrame(frame)
			require.NoError(b, err)
			resp, err := remoting.DecodeFrame(w.buf[4:])
			require.NoError(b, err)
			require.Equal(b, remoting.Success, resp.Code, resp.Remark)
			// Baseline: the append of the message the handler stores, in the same run.
			h, err := decodeSendHeader(req)
			require.NoError(b, err)
			stored, _, _ := br.fixProperties(h.properties)
			const n = 20000
			t0 := time.Now()
			for i := 0; i < n; i++ {
				msg := storedMessage("BenchPath", req.Body, stored)
				if _, err := br.store.Append(msg); err != nil {
					b.Fatal(err)
				}
			}
			appendNs := float64(time.Since(t0).Nanoseconds()) / n

			b.ReportAllocs()
			b.SetBytes(1024)
			b.ResetTimer()
			t1 := time.Now()
			for i := 0; i < b.N; i++ {
				serve()
			}
			perOp := float64(time.Since(t1).Nanoseconds()) / float64(b.N)
			b.StopTimer()
			require.Equal(b, b.N+1, w.n)
			b.ReportMetric(perOp/appendNs, "ratio_to_append")
			b.ReportMetric(appendNs, "append_ns")
		})
	}
}

func storedMessage(topic string, body []byte, props string) *commitlog.Message {
	return &commitlog.Message{Topic: topic, Body: body, Properties: props, BornTimestamp: time.Now().UnixMilli()}
}
