package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/tools/harness"
)

// The anchors of the benchmark table: what the machine, the disk, loopback TCP and JetStream
// do in the same run as the broker numbers they are set against.

// patterned returns n bytes of a repeating pattern (not zeros, which a file system may treat
// specially).
func patterned(n int) []byte {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(i)
	}
	return buf
}

// writeSeq writes total bytes to f from offset 0, len(buf) per write call.
func writeSeq(f vfs.File, total int64, buf []byte) error {
	for off := int64(0); off < total; off += int64(len(buf)) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return err
		}
	}
	return nil
}

// pageCacheWrite writes total bytes in 1 MiB writes to a new file in dir, then writes them
// again, without a sync: the first pass is what a slave's catch-up writes cost the kernel (new
// page-cache pages), the second the same writes into pages already cached. It returns both in
// bytes/s. The file is removed only by the returned function: removing it at once would hand
// its pages back to the next writer already touched, and make what runs next look faster.
func pageCacheWrite(dir string, total int64) (first, again float64, remove func(), err error) {
	f, err := vfs.Default.Create(filepath.Join(dir, fmt.Sprintf("page-cache-write-%d", time.Now().UnixNano())))
	if err != nil {
		return 0, 0, func() {}, err
	}
	remove = func() { f.Close(); _ = vfs.Default.Remove(f.Name()) }
	buf := patterned(1 << 20)
	var rates [2]float64
	for pass := range rates {
		start := time.Now()
		if err := writeSeq(f, total, buf); err != nil {
			return 0, 0, remove, err
		}
		rates[pass] = float64(total) / time.Since(start).Seconds()
	}
	return rates[0], rates[1], remove, nil
}

// smallWriteRate writes total bytes to a new file in size-byte writes, one system call each,
// then fdatasyncs once, and returns bytes/s: with 1 KiB, what one appender that must hand every
// record to the kernel before it answers can reach, without the store's own work; with 1 MiB,
// what `dd bs=1M conv=fdatasync` measures. Like pageCacheWrite, it leaves the file to the
// returned function.
func smallWriteRate(dir string, total int64, size int) (rate float64, remove func(), err error) {
	f, err := vfs.Default.Create(filepath.Join(dir, "small-writes"))
	if err != nil {
		return 0, func() {}, err
	}
	remove = func() { f.Close(); _ = vfs.Default.Remove(f.Name()) }
	start := time.Now()
	if err := writeSeq(f, total, patterned(size)); err != nil {
		return 0, remove, err
	}
	if err := f.Sync(); err != nil {
		return 0, remove, err
	}
	return float64(total) / time.Since(start).Seconds(), remove, nil
}

// fdatasyncRate appends size bytes and fdatasyncs, again and again for d, and returns
// fdatasyncs/s.
func fdatasyncRate(dir string, d time.Duration, size int) (float64, error) {
	f, err := vfs.Default.Create(filepath.Join(dir, "fdatasync"))
	if err != nil {
		return 0, err
	}
	defer func() { f.Close(); _ = vfs.Default.Remove(f.Name()) }()
	small := make([]byte, size)
	start := time.Now()
	n := 0
	for time.Since(start) < d || n < 3 {
		if _, err := f.WriteAt(small, int64(n)*int64(size)); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// loopbackPair returns both ends of one TCP connection over 127.0.0.1.
func loopbackPair() (a, b net.Conn, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(acc)
			return
		}
		acc <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	b, ok := <-acc
	if !ok {
		a.Close()
		return nil, nil, errors.New("loopback accept failed")
	}
	return a, b, nil
}

// loopbackThroughput streams total bytes over one loopback TCP connection (256 KiB writes, the
// reader discarding) and returns bytes/s as the reader saw them.
func loopbackThroughput(total int64) (float64, error) {
	a, b, err := loopbackPair()
	if err != nil {
		return 0, err
	}
	defer a.Close()
	defer b.Close()
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 256<<10)
		for sent := int64(0); sent < total; {
			n := min(int64(len(buf)), total-sent)
			if _, err := a.Write(buf[:n]); err != nil {
				errc <- err
				return
			}
			sent += n
		}
		errc <- nil
	}()
	if _, err := io.CopyN(io.Discard, b, total); err != nil {
		return 0, err
	}
	el := time.Since(start)
	if err := <-errc; err != nil {
		return 0, err
	}
	return float64(total) / el.Seconds(), nil
}

// loopbackRTT ping-pongs n times over one loopback TCP connection (a 1 KiB request, a 64-byte
// answer: the shape of a send) and returns the median round trip.
func loopbackRTT(n int) (time.Duration, error) {
	a, b, err := loopbackPair()
	if err != nil {
		return 0, err
	}
	defer a.Close()
	defer b.Close()
	go func() {
		req, resp := make([]byte, 1024), make([]byte, 64)
		for {
			if _, err := io.ReadFull(b, req); err != nil {
				return
			}
			if _, err := b.Write(resp); err != nil {
				return
			}
		}
	}()
	req, resp := make([]byte, 1024), make([]byte, 64)
	lat := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if _, err := a.Write(req); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(a, resp); err != nil {
			return 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return lat[len(lat)/2], nil
}

// jsCluster is JetStream on one or three in-process nats-servers over loopback, with one
// file-backed stream of the given replica count on subject "bench.>".
type jsCluster struct {
	servers []*natsserver.Server
	urls    []string
}

// startJetStream starts replicas servers (1: a single server; 3: a JetStream cluster over
// loopback routes) with stores under dir and creates the stream "BENCH" with that many
// replicas, waiting (within ready) for the cluster to elect its leaders.
func startJetStream(dir string, replicas int, ready time.Duration) (*jsCluster, error) {
	ports, err := harness.FreePorts(2 * replicas)
	if err != nil {
		return nil, err
	}
	var routes []string
	for i := 0; i < replicas; i++ {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[replicas+i]))
	}
	c := &jsCluster{}
	for i := 0; i < replicas; i++ {
		o := &natsserver.Options{
			ServerName: fmt.Sprintf("js%d", i), Host: "127.0.0.1", Port: ports[i], NoLog: true, NoSigs: true,
			JetStream: true, StoreDir: filepath.Join(dir, fmt.Sprintf("js%d", i)),
		}
		if replicas > 1 {
			o.Cluster = natsserver.ClusterOpts{Name: "bench", Host: "127.0.0.1", Port: ports[replicas+i]}
			o.Routes = natsserver.RoutesFromStr(strings.Join(routes, ","))
		}
		s, err := natsserver.NewServer(o)
		if err != nil {
			c.close()
			return nil, err
		}
		go s.Start()
		c.servers = append(c.servers, s)
		c.urls = append(c.urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	for _, s := range c.servers {
		if !s.ReadyForConnections(ready) {
			c.close()
			return nil, errors.New("jetstream: server not ready")
		}
	}
	nc, err := nats.Connect(strings.Join(c.urls, ","))
	if err != nil {
		c.close()
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		c.close()
		return nil, err
	}
	deadline := time.Now().Add(ready)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: "BENCH", Subjects: []string{"bench.>"}, Storage: jetstream.FileStorage, Replicas: replicas,
			MaxBytes: 1 << 30, Discard: jetstream.DiscardOld,
		})
		cancel()
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.close()
			return nil, fmt.Errorf("jetstream: stream with %d replicas: %w", replicas, err)
		}
		time.Sleep(100 * time.Millisecond) // the meta leader is still being elected: retry
	}
}

func (c *jsCluster) close() {
	for _, s := range c.servers {
		s.Shutdown()
	}
	for _, s := range c.servers {
		s.WaitForShutdown()
	}
}

// jsAsyncPublish publishes size-byte messages with PublishAsync, at most inflight unanswered,
// for d, and returns how many were acknowledged in how long.
func (c *jsCluster) jsAsyncPublish(size, inflight int, d time.Duration) (int64, time.Duration, error) {
	nc, err := nats.Connect(strings.Join(c.urls, ","))
	if err != nil {
		return 0, 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(inflight))
	if err != nil {
		return 0, 0, err
	}
	data := make([]byte, size)
	futures := make(chan jetstream.PubAckFuture, inflight)
	var acked, failed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for f := range futures {
			select {
			case <-f.Ok():
				acked.Add(1)
			case <-f.Err():
				failed.Add(1)
			}
		}
	}()
	start := time.Now()
	for time.Since(start) < d {
		f, err := js.PublishAsync("bench.async", data)
		if err != nil {
			if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				continue
			}
			close(futures)
			wg.Wait()
			return 0, 0, err
		}
		futures <- f
	}
	close(futures)
	wg.Wait()
	el := time.Since(start)
	if acked.Load() == 0 {
		return 0, 0, fmt.Errorf("jetstream: no async publish acknowledged (%d failed)", failed.Load())
	}
	return acked.Load(), el, nil
}

// jsSyncPublish publishes size-byte messages with conc concurrent publishers (a connection
// each), each waiting for every acknowledgement, for d, and returns how many were
// acknowledged in how long.
func (c *jsCluster) jsSyncPublish(size, conc int, d time.Duration) (int64, time.Duration, error) {
	var acked atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			fail := func(err error) {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			nc, err := nats.Connect(strings.Join(c.urls, ","))
			if err != nil {
				fail(err)
				return
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				fail(err)
				return
			}
			data := make([]byte, size)
			subj := fmt.Sprintf("bench.sync.%d", i)
			for time.Since(start) < d {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := js.Publish(ctx, subj, data)
				cancel()
				if err != nil {
					fail(err)
					return
				}
				acked.Add(1)
			}
		}(i)
	}
	wg.Wait()
	el := time.Since(start)
	if firstErr != nil {
		return 0, 0, firstErr
	}
	return acked.Load(), el, nil
}
