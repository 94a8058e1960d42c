package remoting

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"
	"unicode/utf8"
)

func fuzzSeeds() [][]byte {
	c := sampleCommand()
	bin, _ := AppendBinaryFrame(nil, c)
	seeds := [][]byte{
		AppendFrame(nil, c)[4:],
		bin[4:],
		rawJSONFrame(appendixASyncSend, []byte("hello-sync"))[4:],
		rawJSONFrame(`{"code":0,"extFields":{"n":12,"b":true,"z":null,"o":{"a":[1]}},"flag":1,"opaque":3}`, nil)[4:],
		rawJSONFrame(`{"remark":"\ud83d\ude00\u0001\"","opaque":-1}`, []byte{0, 1})[4:],
		rawJSONFrame(`{"code":10,"opaque":77,"extFields":{"a":[}`, nil)[4:],
		{0, 0, 0, 0},
		{1, 0, 0, 21},
		{2, 0, 0, 0},
		[]byte("GET / HTTP/1.1\r\n\r\n"),
	}
	return seeds
}

func allValidUTF8(c *Command) bool {
	if !utf8.ValidString(c.Remark) || !utf8.ValidString(c.Language) {
		return false
	}
	for k, v := range c.ExtFields {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// FuzzDecodeFrame: any bytes after the length prefix must decode or fail cleanly, and what
// decodes must re-encode (as JSON) into a frame that decodes to the same command.
func FuzzDecodeFrame(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		recoverOpaque(frame)
		c, err := DecodeFrame(frame)
		if err != nil {
			return
		}
		out, err := EncodeFrame(nil, c)
		if err != nil {
			return
		}
		again, err := DecodeFrame(out[4:])
		if err != nil {
			t.Fatalf("re-encoded frame does not decode: %v\n%q", err, out)
		}
		if again.Code != c.Code || again.Opaque != c.Opaque || again.Flag != c.Flag ||
			again.Version != c.Version || !bytes.Equal(again.Body, c.Body) {
			t.Fatalf("round trip changed the command: %v vs %v", c, again)
		}
		if allValidUTF8(c) && (again.Remark != c.Remark || len(again.ExtFields) != len(c.ExtFields)) {
			t.Fatalf("round trip changed strings: %v vs %v", c, again)
		}
		// The stream reader must agree with the frame decoder.
		if _, err := ReadFrame(bytes.NewReader(out), nil, len(out)); err != nil {
			t.Fatalf("ReadFrame: %v", err)
		}
	})
}

// FuzzDecodeBinaryHeader feeds arbitrary bytes as a ROCKETMQ binary header; what decodes
// must survive a binary round trip unchanged.
func FuzzDecodeBinaryHeader(f *testing.F) {
	for _, c := range []*Command{sampleCommand(), {Code: 1}, NewResponse(&Command{Opaque: 9}, SystemBusy, "busy")} {
		bin, _ := AppendBinaryFrame(nil, c)
		f.Add(bin[8:], []byte(nil))
	}
	f.Add(make([]byte, 21), []byte("body"))
	f.Add([]byte{0, 1, 9, 1, 61, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 1, 'k', 0, 0, 0}, []byte(nil))
	f.Fuzz(func(t *testing.T, header, body []byte) {
		if len(header) > maxHeaderLen {
			return
		}
		frame := binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(header)))
		frame = append(append(frame, header...), body...)
		c, err := DecodeFrame(frame)
		if err != nil {
			return
		}
		out, err := AppendBinaryFrame(nil, c)
		if err != nil {
			return
		}
		again, err := DecodeFrame(out[4:])
		if err != nil {
			t.Fatalf("re-encoded binary frame does not decode: %v", err)
		}
		// Unknown language bytes decode as "UNKNOWN" and re-encode as OTHER; not compared.
		c.Language, again.Language = "", ""
		if again.Code != c.Code || again.Opaque != c.Opaque || again.Flag != c.Flag || again.Version != c.Version ||
			again.Remark != c.Remark || len(again.ExtFields) != len(c.ExtFields) || !bytes.Equal(again.Body, c.Body) {
			t.Fatalf("binary round trip changed the command: %v vs %v", c, again)
		}
		for k, v := range c.ExtFields {
			if again.ExtFields[k] != v {
				t.Fatalf("ext %q changed", k)
			}
		}
	})
}

// chunkReader hands out data in the chunk sizes given (cycling), as a socket might.
type chunkReader struct {
	data   []byte
	chunks []byte
	i      int
}

func (c *chunkReader) Read(b []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1 + len(c.data)
	if len(c.chunks) > 0 {
		n = 1 + int(c.chunks[c.i%len(c.chunks)])*37
		c.i++
	}
	n = min(n, len(b), len(c.data))
	copy(b, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunkReader) SetReadDeadline(time.Time) error { return nil }

// FuzzFrameReader: whatever the chunking and the byte budget, the connection reader returns
// the frames ReadFrame finds, in order; a frame it drops for the budget keeps its header and
// the frames after it still come out whole (the stream stays in sync); and it never holds a
// buffer larger than twice what arrived.
func FuzzFrameReader(f *testing.F) {
	var stream []byte
	for _, size := range []int{0, 10, 5000, 70000, 3} {
		c := req(testCode, int32(size), map[string]string{"k": "v"})
		c.Body = bytes.Repeat([]byte{'b'}, size)
		stream = AppendFrame(stream, c)
	}
	f.Add(stream, []byte{0, 200, 3}, uint32(0))
	f.Add(stream, []byte{255}, uint32(20000))
	f.Add(stream, []byte(nil), uint32(1))
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 200, 1, 2}, []byte{1}, uint32(1))
	f.Fuzz(func(t *testing.T, data, chunks []byte, budget uint32) {
		const maxFrame = 128 << 10
		var ref [][]byte
		var refErr error
		br := bytes.NewReader(data)
		for {
			fr, err := ReadFrame(br, nil, maxFrame)
			if err != nil {
				refErr = err
				break
			}
			ref = append(ref, fr)
		}
		b := &byteBudget{max: int64(budget % (256 << 10))}
		fr := newFrameReader(&chunkReader{data: data, chunks: chunks}, nil, maxFrame, b, &spareBuffers{}, 0, 0)
		for i := 0; ; i++ {
			got, err := fr.read()
			if len(fr.buf) > minReadBuffer && len(fr.buf) > 2*(len(data)+lengthSize) {
				t.Fatalf("buffer of %d bytes for a %d-byte stream", len(fr.buf), len(data))
			}
			if err != nil {
				if i < len(ref) && !errors.Is(err, ErrOverloaded) && !errors.Is(err, ErrMalformed) {
					t.Fatalf("frame %d: %v, ReadFrame read it", i, err)
				}
				if i == len(ref) && refErr == io.EOF && err != io.EOF {
					t.Fatalf("stream end: %v, want EOF", err)
				}
				break
			}
			if i >= len(ref) {
				t.Fatalf("frame %d beyond what ReadFrame found (%v)", i, refErr)
			}
			if got.dropped {
				if !bytes.HasPrefix(ref[i], got.header) || int(got.size) != len(ref[i]) {
					t.Fatalf("frame %d dropped with a wrong header", i)
				}
				continue
			}
			if !bytes.Equal(got.data, ref[i]) {
				t.Fatalf("frame %d differs", i)
			}
		}
		fr.close()
		if b.used.Load() != 0 {
			t.Fatalf("budget holds %d bytes after close", b.used.Load())
		}
	})
}
