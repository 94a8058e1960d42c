package main

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
)

// BenchmarkRawRequest builds and encodes one SEND_MESSAGE of 1 KiB the way the raw producer
// does (a reused slot: two map updates, a patched body) and reports time and allocations as
// ratios to building it afresh per message (a new 14-entry map, a body filled byte by byte),
// measured in the same run.
func BenchmarkRawRequest(b *testing.B) {
	cfg := DefaultConfig()
	st := newStats()
	queues := []queueRef{{brokerName: "broker-a", queueID: 3, addrs: map[int64]string{0: "127.0.0.1:10911"}}}
	fixed, err := newSendTemplates(cfg.Topic, queues)
	if err != nil {
		b.Fatal(err)
	}
	p := &rawProducer{cfg: cfg, st: st, fixed: fixed, queues: queues, qids: []string{"3"}}
	fresh := func() *remoting.Command {
		ext := map[string]string{
			"producerGroup": "bench-pg", "topic": cfg.Topic, "queueId": strconv.Itoa(3), "sysFlag": "0",
			"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0", "reconsumeTimes": "0",
			"unitMode": "false", "maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
			"batch": "false", "properties": "", "bname": "broker-a",
		}
		return remoting.NewRequest(remoting.SendMessage, ext, st.body(cfg.Size))
	}
	var buf []byte
	freshAllocs := testing.AllocsPerRun(200, func() { buf = remoting.AppendFrame(buf[:0], fresh()) })
	s := p.newSlot()
	slotAllocs := testing.AllocsPerRun(200, func() { p.request(s); buf = remoting.AppendFrame(buf[:0], s.req) })
	start := time.Now()
	for i := 0; i < b.N; i++ {
		buf = remoting.AppendFrame(buf[:0], fresh())
	}
	freshTime := time.Since(start)
	b.ResetTimer()
	start = time.Now()
	for i := 0; i < b.N; i++ {
		p.request(s)
		buf = remoting.AppendFrame(buf[:0], s.req)
	}
	slotTime := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(slotTime)/float64(freshTime), "x_fresh_time")
	b.ReportMetric(slotAllocs, "allocs/msg")
	b.ReportMetric(freshAllocs, "fresh_allocs/msg")
}

// sendAnswerExt is a send's answer header as the broker writes it (typed, through ExtAppend).
type sendAnswerExt struct{ queueOffset int64 }

func (a *sendAnswerExt) AppendExt(w remoting.ExtWriter) remoting.ExtWriter {
	w.String("MSG_REGION", "DefaultRegion")
	w.String("TRACE_ON", "true")
	w.String("msgId", "7F00000100002A9F0000000000001000")
	w.Int("queueId", 3)
	w.Int("queueOffset", a.queueOffset)
	w.Int("replicas", 1)
	w.String("stored", "true")
	return w
}

// BenchmarkRawProduce runs the raw producer's async path (a window of 64 sends on one
// pipelined connection, refilled from the answers' callbacks) against an in-process remoting
// server that answers every SEND_MESSAGE at once with a broker-shaped answer, and reports time
// and allocations per message of the whole process (server included) as ratios to the same
// run's map path (the ext map encoded per request, answers decoded into a map: what signed
// runs still do) and to its blocking path (a goroutine per slot blocked in InvokeExt, as async
// mode ran before the window). Its CPU profile (-cpuprofile) shows the client's share apart
// from the server's by function.
func BenchmarkRawProduce(b *testing.B) {
	scfg := remoting.DefaultServerConfig()
	scfg.Addr = "127.0.0.1:0"
	srv, err := remoting.NewServer(scfg)
	if err != nil {
		b.Fatal(err)
	}
	var offset atomic.Int64
	srv.HandleFunc(remoting.SendMessage, func(w remoting.ResponseWriter, req *remoting.Command) {
		resp := &remoting.Command{Code: remoting.Success, Language: remoting.LanguageGo, Version: remoting.VersionV4_9_8,
			Flag: remoting.FlagResponse, Opaque: req.Opaque, ExtAppend: &sendAnswerExt{queueOffset: offset.Add(1)}}
		req.ReleaseExt() // as the broker's send handler does
		_ = w.Write(resp)
	})
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	addr := srv.Addr().String()

	cfg := DefaultConfig()
	cfg.Mode, cfg.Inflight, cfg.Client = ModeAsync, 64, ClientRaw
	r := &route{write: []queueRef{{brokerName: "broker-a", queueID: 3, addrs: map[int64]string{0: addr}}}}
	produce := func(mapPath, blocking bool, n int) (time.Duration, float64) {
		st := newStats()
		c := cfg
		c.N = n
		p, err := newRawProducer(c, r, 0, st)
		if err != nil {
			b.Fatal(err)
		}
		defer p.close()
		p.mapPath, p.blocking = mapPath, blocking
		// Connect outside the measured part.
		if _, err := p.cli.Invoke(context.Background(), addr, remoting.NewRequest(remoting.GetMaxOffset, nil, nil)); err != nil {
			b.Fatal(err)
		}
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		start := time.Now()
		if err := p.run(context.Background(), make(chan struct{})); err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		runtime.ReadMemStats(&ms1)
		if st.errs.Load() > 0 || st.sent.Load() != int64(n) {
			b.Fatalf("%d of %d sent, %d errors, first: %s", st.sent.Load(), n, st.errs.Load(), st.firstErr)
		}
		return elapsed, float64(ms1.Mallocs-ms0.Mallocs) / float64(n)
	}
	mapTime, mapAllocs := produce(true, false, b.N)
	blockingTime, blockingAllocs := produce(false, true, b.N)
	b.ResetTimer()
	typedTime, typedAllocs := produce(false, false, b.N)
	b.StopTimer()
	b.ReportMetric(typedAllocs, "allocs/msg")
	b.ReportMetric(mapAllocs, "map_allocs/msg")
	b.ReportMetric(blockingAllocs, "blocking_allocs/msg")
	b.ReportMetric(float64(typedTime)/float64(mapTime), "x_map_time")
	b.ReportMetric(float64(typedTime)/float64(blockingTime), "x_blocking_time")
}
