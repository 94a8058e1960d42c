package broker

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// haTlsEnable: the master's HA port speaks TLS (the remoting port's certificate, here the
// test-mode one), a slave with haTlsEnable replicates over it, and a slave without it never
// gets in sync.
func TestHALinkOverTLS(t *testing.T) {
	mc := syncMasterConfig(t)
	mc.HATLSEnable = true
	m := startBroker(t, mc)

	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", m.HAAddr(), &tls.Config{InsecureSkipVerify: true})
	require.NoError(t, err, "the HA port does not speak TLS")
	require.NotEmpty(t, conn.ConnectionState().PeerCertificates)
	_ = conn.Close()

	plain := startBroker(t, slaveConfig(t, m.HAAddr()))
	require.Never(t, func() bool { return m.view().master.InSyncCount() == 2 }, 2*time.Second, 50*time.Millisecond,
		"a slave speaking plain TCP got in sync with a TLS HA port")
	require.False(t, plain.Status().HASlave.Connected)
	require.NoError(t, plain.Shutdown(t.Context()))

	sc := slaveConfig(t, m.HAAddr())
	sc.HATLSEnable = true
	s := startBroker(t, sc)
	require.Eventually(t, func() bool { return m.view().master.InSyncCount() == 2 }, 15*time.Second, 10*time.Millisecond)
	c := newTestClient(t)
	resp := send(t, c, m.Addr(), "TLSHA", 0, "", "over tls")
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	require.Equal(t, "2", resp.Ext("replicas"))
	require.Eventually(t, func() bool { return s.store.MaxOffset() == m.store.MaxOffset() }, 10*time.Second, 10*time.Millisecond)
}
