// Command bench produces and consumes through a RocketMQ name server with N concurrent
// clients and reports throughput and latency.
//
//	bench -namesrv 127.0.0.1:9876 -topic BenchTopic -size 1024 -producers 8 -consumers 1 -mode sync -duration 10s
//
// By default it drives the unmodified rocketmq-client-go/v2 producer and push consumer
// (-client go). -client raw uses a lean remoting client instead (SEND_MESSAGE frames straight to
// the master, PULL_MESSAGE loops against the master or, with -pull-from slave, the slave), which
// measures the broker rather than the client library.
//
// Against a group with ACL on (aclEnable=true), -ak ACCESS_KEY -sk SECRET_KEY sign every
// request; creating a missing topic needs an admin account, sending PUB and consuming SUB.
//
// While it runs it prints a progress line each second; at the end it prints messages/s, MB/s,
// p50/p99/p99.9 send latency, end-to-end (store to delivery) latency of consumed messages, and
// the count of each send status.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
)

func main() {
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("bench", flag.ExitOnError)
	cfg.bindFlags(fs)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	_ = fs.Parse(os.Args[1:])
	if err := cfg.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *cpuProfile != "" {
		stopProfile, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(2)
		}
		defer stopProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := Run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		exit(1)
	}
	res.Print(os.Stdout)
	if res.SendErrors > 0 && res.Sent == 0 {
		exit(1)
	}
}

// exitHooks run before os.Exit (which skips deferred calls): the CPU profile's flush.
var exitHooks []func()

func exit(code int) {
	for _, h := range exitHooks {
		h()
	}
	os.Exit(code)
}

// startCPUProfile starts profiling into path; the returned function stops and closes it.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		})
	}
	exitHooks = append(exitHooks, stop)
	return stop, nil
}
