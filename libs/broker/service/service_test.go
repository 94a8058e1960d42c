package service

import (
	"bytes"
	"testing"

	"github.com/rmqha/rmqha/libs/broker"
	"github.com/stretchr/testify/require"
)

func TestMainRefusesBadConfig(t *testing.T) {
	var out bytes.Buffer
	master := Options{Program: "master", CheckRole: MasterRoles}
	require.Equal(t, 2, Main(master, []string{"-brokerRole=SLAVE", "-brokerId=1"}, nil, &out))
	require.Contains(t, out.String(), "use the slave binary")

	out.Reset()
	require.Equal(t, 2, Main(master, []string{"-noSuchKey=1"}, nil, &out))
	require.Contains(t, out.String(), "noSuchKey")

	out.Reset()
	require.Equal(t, 2, Main(master, nil, []string{"RMQ_BROKER_ID=3"}, &out))
	require.Contains(t, out.String(), "brokerId")

	slave := Options{Program: "slave", CheckRole: SlaveRoles, Defaults: func(c *broker.Config) {
		c.BrokerRole = broker.RoleSlave
		c.BrokerID = 1
	}}
	out.Reset()
	require.Equal(t, 2, Main(slave, []string{"-brokerRole=ASYNC_MASTER"}, nil, &out))
	require.Contains(t, out.String(), "use the master binary")

	out.Reset()
	require.Equal(t, 2, Main(slave, []string{"-logFormat=xml"}, nil, &out))

	out.Reset()
	require.Equal(t, 0, Main(slave, []string{"-h"}, nil, &out))
	require.Contains(t, out.String(), "haMasterAddress")
}
