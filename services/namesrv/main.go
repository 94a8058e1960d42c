// Command namesrv is the name server of the broker group: brokers register
// with it, clients ask it for topic routes (RocketMQ's remoting protocol on
// listenPort, 9876 by default).
//
//	namesrv -c namesrv.conf      # keys: see `namesrv -h`
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/services/namesrv/nameserver"
	"github.com/rmqha/rmqha/services/namesrv/registry"
	"github.com/sirupsen/logrus"
)

func main() {
	if err := run(); err != nil {
		if errors.Is(err, props.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "namesrv:", err)
		os.Exit(2)
	}
}

func run() error {
	cfg := nameserver.DefaultConfig()
	file, err := props.LoadOS(&cfg)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := logrus.New()
	lvl, _ := logrus.ParseLevel(cfg.LogLevel)
	log.SetLevel(lvl)
	if cfg.LogFormat == "json" {
		log.SetFormatter(&logrus.JSONFormatter{})
	}
	entry := log.WithField("service", "namesrv")
	cfg.Logger = entry
	reg := registry.NewMemory()
	srv, err := nameserver.New(cfg, reg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	entry.WithFields(logrus.Fields{"config": props.Dump(&cfg), "file": file, "addr": srv.Addr().String(), "registry": "memory"}).Info("namesrv started")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	entry.WithField("signal", s.String()).Info("stopping")
	return srv.Close()
}
