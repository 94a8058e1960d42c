package service

import (
	"bytes"
	"testing"

	"github.com/rmqha/rmqha/libs/broker"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/stretchr/testify/require"
)

func TestFailoverConfiguration(t *testing.T) {
	var out bytes.Buffer
	master := Options{Program: "master", CheckRole: MasterRoles}
	require.Equal(t, 2, Main(master, []string{"-enableFailover=true"}, nil, &out))
	require.Contains(t, out.String(), "enableFailover=true needs brokerRole=SLAVE")

	slave := Options{Program: "slave", CheckRole: SlaveRoles, Defaults: func(c *broker.Config) {
		c.BrokerRole = broker.RoleSlave
		c.BrokerID = 1
	}}
	out.Reset()
	require.Equal(t, 2, Main(slave, []string{"-enableFailover=true", "-failoverSafetyMargin=3000"}, nil, &out))
	require.Contains(t, out.String(), "failoverSafetyMargin")

	out.Reset()
	require.Equal(t, 2, Main(slave, []string{"-enableFailover=true", "-haMasterAddress=127.0.0.1:1"}, nil, &out))
	require.Contains(t, out.String(), "haMasterAddress")

	// Off by default: the keys are accepted and change nothing.
	cfg := broker.DefaultConfig()
	cfg.HASecret = hawiretest.NewSecret()
	require.False(t, cfg.EnableFailover)
	require.NoError(t, cfg.Validate())
}
