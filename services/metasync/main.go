// Command metasync pulls the metadata tables (topics, subscription groups,
// consumer offsets, delay offsets) from every master on a schedule, keeps the
// latest snapshot of each on disk, announces changed versions on NATS and
// serves the snapshots to slaves over HTTP.
//
//	metasync -c metasync.conf      # keys: see `metasync -h`
//
// Masters come from masterAddrs, else the Consul registry ($CONSUL_HTTP_ADDR
// or consulAddr), else the name servers (namesrvAddr). NATS from natsUrl or
// $NATS_URL.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/services/metasync/syncer"
	"github.com/sirupsen/logrus"
)

func main() {
	if err := run(); err != nil {
		if errors.Is(err, props.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "metasync:", err)
		os.Exit(2)
	}
}

func run() error {
	cfg := syncer.DefaultConfig()
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
	} else {
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	}
	cfg.Logger = log
	svc, err := syncer.New(cfg)
	if err != nil {
		return err
	}
	if err := svc.Start(); err != nil {
		return err
	}
	log.WithFields(logrus.Fields{"config": props.Dump(&cfg), "file": file, "http": svc.HTTPAddr()}).Info("metasync started")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	log.WithField("signal", s.String()).Info("stopping")
	return svc.Close()
}
