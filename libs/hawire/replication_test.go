package hawire_test

import (
	"testing"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/hawire/memlog"
)

func newMemLog(t *testing.T) hawire.Log { return memlog.New(64 << 10) }

func TestReplicationOverLoopback(t *testing.T) {
	hawiretest.RunReplication(t, newMemLog)
}
