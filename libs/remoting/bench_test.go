package remoting

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// rawEcho is the baseline: a TCP server that echoes length-prefixed frames with no header
// parsing, no dispatch and no opaque matching, one goroutine per connection.
func rawEcho(b *testing.B) (addr string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				br := bufio.NewReader(nc)
				var buf []byte
				for {
					frame, err := ReadFrame(br, buf, 1<<20)
					if err != nil {
						return
					}
					buf = frame[:0]
					out := append(make([]byte, 4, 4+len(frame)), frame...)
					out[0], out[1], out[2], out[3] = byte(len(frame)>>24), byte(len(frame)>>16), byte(len(frame)>>8), byte(len(frame))
					if _, err := nc.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

// split runs n operations over callers goroutines and returns the elapsed time.
func split(n, callers int, op func(g int) error) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	start := time.Now()
	for g := 0; g < callers; g++ {
		count := n / callers
		if g < n%callers {
			count++
		}
		wg.Add(1)
		go func(g, count int) {
			defer wg.Done()
			for i := 0; i < count; i++ {
				if err := op(g); err != nil {
					errs <- err
					return
				}
			}
		}(g, count)
	}
	wg.Wait()
	close(errs)
	return time.Since(start), <-errs
}

func benchRoundTrip(b *testing.B, callers int) {
	req := NewRequest(SendMessage, map[string]string{
		"producerGroup": "pg", "topic": "TopicTest", "queueId": "1", "sysFlag": "0",
		"bornTimestamp": "1795936508414", "flag": "0", "properties": "TAGS\x01TagA\x02",
	}, make([]byte, 128))
	frame := AppendFrame(nil, req)

	// Baseline in the same run: raw ping-pong of the same frame, one connection per caller.
	rawAddr, stopRaw := rawEcho(b)
	defer stopRaw()
	type rawPeer struct {
		nc  net.Conn
		br  *bufio.Reader
		buf []byte
	}
	peers := make([]*rawPeer, callers)
	for i := range peers {
		nc, err := net.Dial("tcp", rawAddr)
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		peers[i] = &rawPeer{nc: nc, br: bufio.NewReader(nc)}
	}
	rawElapsed, err := split(b.N, callers, func(g int) error {
		p := peers[g]
		if _, err := p.nc.Write(frame); err != nil {
			return err
		}
		f, err := ReadFrame(p.br, p.buf, 1<<20)
		p.buf = f[:0]
		return err
	})
	if err != nil {
		b.Fatal(err)
	}

	// The remoting Server and Client: all callers share one pipelined connection.
	s, err := NewServer(ServerConfig{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	s.HandleFunc(SendMessage, echo)
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cl := NewClient(ClientConfig{RequestTimeout: 30 * time.Second})
	defer cl.Close()
	addr := s.Addr().String()
	if _, err := cl.Invoke(context.Background(), addr, req); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	elapsed, err := split(b.N, callers, func(int) error {
		_, err := cl.Invoke(context.Background(), addr, req)
		return err
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	rate := float64(b.N) / elapsed.Seconds()
	rawRate := float64(b.N) / rawElapsed.Seconds()
	b.ReportMetric(rate, "rt/s")
	b.ReportMetric(rawRate, "raw_rt/s")
	b.ReportMetric(rate/rawRate, "ratio_vs_raw")
}

// BenchmarkRoundTrip measures request/response round trips per second over loopback with 1
// and 64 concurrent callers, against a raw TCP ping-pong of the same frame measured in the
// same run (ratio_vs_raw = rt/s ÷ raw_rt/s).
func BenchmarkRoundTrip(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) { benchRoundTrip(b, callers) })
	}
}

// BenchmarkAppendFrame and BenchmarkDecodeFrame measure the codec alone on the Appendix A
// sync-send header.
func BenchmarkAppendFrame(b *testing.B) {
	frame := rawJSONFrame(appendixASyncSend, []byte("hello-sync"))
	c, err := DecodeFrame(frame[4:])
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for i := 0; i < b.N; i++ {
		buf = AppendFrame(buf[:0], c)
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	frame := rawJSONFrame(appendixASyncSend, []byte("hello-sync"))[4:]
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for i := 0; i < b.N; i++ {
		if _, err := DecodeFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJSONHeaderFast decodes the Go client's SEND_MESSAGE header on the fast path
// and reports its time and allocations as a ratio to the generic decoder's, measured in the
// same run on the same b.N.
func BenchmarkDecodeJSONHeaderFast(b *testing.B) {
	h := []byte(appendixASyncSend)
	genAllocs := testing.AllocsPerRun(100, func() { _, _ = decodeJSONHeader(h) })
	fastAllocs := testing.AllocsPerRun(100, func() { _, _ = decodeJSONHeaderFast(h) })
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := decodeJSONHeader(h); err != nil {
			b.Fatal(err)
		}
	}
	gen := time.Since(start)
	b.ReportAllocs()
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		if _, ok := decodeJSONHeaderFast(h); !ok {
			b.Fatal("fast path gave up")
		}
	}
	fast := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(fast)/float64(gen), "x_generic_time")
	b.ReportMetric(fastAllocs/genAllocs, "x_generic_allocs")
	b.ReportMetric(float64(gen.Nanoseconds())/float64(b.N), "generic_ns/op")
}

// BenchmarkDecodeJSONHeaderPairs: a keyed SEND_MESSAGE_V2 header (TAGS, KEYS and UNIQ_KEY in
// its escaped properties, as rocketmq-client-go writes it) decoded as the server decodes an
// inline request: ext fields into pairs, strings from the connection's arena. It reports the
// time and allocations per header against the generic decoder measured in the same run.
func BenchmarkDecodeJSONHeaderPairs(b *testing.B) {
	h := []byte(`{"code":310,"language":"GO","version":317,"opaque":2,"flag":0,"remark":"","extFields":{"a":"pg","b":"TopicTest","c":"TBW102","d":"4","e":"1","f":"0","g":"1795936508414","h":"0","i":"TAGS\u0001TagA\u0002KEYS\u0001order-000123\u0002UNIQ_KEY\u0001C000020244FC0000000091c070600001\u0002WAIT\u0001true\u0002","j":"0","k":"false","l":"0","m":"false","n":"broker-a"}}`)
	yes := func(int32) bool { return true }
	var arena stringArena
	decode := func() {
		c := &Command{}
		if !decodeJSONHeaderFastInto(c, h, yes, &arena) {
			b.Fatal("fast path gave up")
		}
		c.releasePairs()
	}
	allocs := testing.AllocsPerRun(100, decode)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := decodeJSONHeader(h); err != nil {
			b.Fatal(err)
		}
	}
	gen := time.Since(start)
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		decode()
	}
	fast := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(fast)/float64(gen), "x_generic_time")
	b.ReportMetric(allocs, "allocs/header")
}
