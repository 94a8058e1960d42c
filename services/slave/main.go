// Command slave runs a RocketMQ-compatible slave broker: it replicates its master's CommitLog
// (from haMasterAddress, or the address the name servers return) and serves pulls.
//
//	slave -c broker.conf [-key=value ...]
//
// brokerRole defaults to SLAVE and brokerId to 1 here; master roles are refused.
package main

import (
	"os"

	"github.com/rmqha/rmqha/libs/broker"
	"github.com/rmqha/rmqha/libs/broker/service"
)

func main() {
	os.Exit(service.Run(service.Options{
		Program: "slave",
		Defaults: func(c *broker.Config) {
			c.BrokerRole = broker.RoleSlave
			c.BrokerID = 1
		},
		CheckRole: service.SlaveRoles,
	}))
}
