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
	"github.com/rmqha/rmqha/libs/obs"
	"github.com/rmqha/rmqha/libs/props"
	"github.com/rmqha/rmqha/services/metasync/syncer"
	"github.com/sirupsen/logrus"
)

func main() { obs.Exit("metasync", run()) }

func run() error {
	cfg := syncer.DefaultConfig()
	file, err := props.LoadOS(&cfg)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log, err := obs.NewLogger(cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
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
	obs.WaitForStop(log)
	return svc.Close()
}
