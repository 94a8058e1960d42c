// Command master runs a RocketMQ-compatible master broker (ASYNC_MASTER or SYNC_MASTER).
//
//	master -c broker.conf [-key=value ...]
//
// Keys use RocketMQ's names (brokerName, brokerRole, listenPort, namesrvAddr, ...); each can
// also be set with an RMQ_* environment variable. SIGTERM or SIGINT stops it cleanly: it
// unregisters from the name servers, answers pending requests, flushes and closes the store.
package main

import (
	"os"

	"github.com/rmqha/rmqha/libs/broker/service"
)

func main() {
	os.Exit(service.Run(service.Options{Program: "master", CheckRole: service.MasterRoles}))
}
