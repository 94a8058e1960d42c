package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// rawConn is a bare TCP connection for writing bytes no client would.
type rawConn struct {
	t *testing.T
	c net.Conn
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	require.NoError(r.t, r.c.SetWriteDeadline(time.Now().Add(5*time.Second)))
	_, err := r.c.Write(b)
	require.NoError(r.t, err)
}

// readCommand reads one frame within timeout.
func (r *rawConn) readCommand(timeout time.Duration) (*remoting.Command, error) {
	if err := r.c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	frame, err := remoting.ReadFrame(r.c, nil, 64<<20)
	if err != nil {
		return nil, err
	}
	return remoting.DecodeFrame(frame)
}

// requireClosed fails unless the server closes the connection within timeout (any bytes it
// sends first are read and dropped).
func (r *rawConn) requireClosed(what string, timeout time.Duration) {
	r.t.Helper()
	require.NoError(r.t, r.c.SetReadDeadline(time.Now().Add(timeout)))
	buf := make([]byte, 4096)
	for {
		_, err := r.c.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
			r.t.Fatalf("%s: connection still open after %s", what, timeout)
		}
		return // EOF or reset: closed
	}
}

func frame(header []byte, serializeType byte, body []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(body))
	binary.BigEndian.PutUint32(b[0:4], uint32(4+len(header)+len(body)))
	binary.BigEndian.PutUint32(b[4:8], uint32(serializeType)<<24|uint32(len(header)))
	b = append(b, header...)
	return append(b, body...)
}

func testBadInput(t *testing.T, g *Group) {
	ctx := context.Background()
	// A healthy client connected before the bad input, used again after it.
	bystander := newProducer(t, g, "pg-bystander")
	var hist History
	m := primitive.NewMessage("E2EBadInput", []byte("before"))
	mustSend(t, bystander, &hist, m)

	t.Run("OversizeFrame", func(t *testing.T) {
		rc := dialRaw(t, g.MasterAddr)
		hdr := make([]byte, 8)
		binary.BigEndian.PutUint32(hdr[0:4], 17<<20) // above the 16 MiB frame limit
		binary.BigEndian.PutUint32(hdr[4:8], 2)
		rc.write(hdr)
		rc.requireClosed("frame of 17 MiB", 10*time.Second)
	})
	t.Run("Garbage", func(t *testing.T) {
		rc := dialRaw(t, g.MasterAddr)
		rc.write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")) // reads as a ~1.2 GB length
		rc.requireClosed("HTTP request bytes", 10*time.Second)

		rc = dialRaw(t, g.MasterAddr)
		rc.write(frame([]byte("{not json at all"), 0, []byte("xx")))
		if resp, err := rc.readCommand(10 * time.Second); err == nil {
			require.Equal(t, remoting.SystemError, resp.Code, "answer to an undecodable header: %v", resp)
		}

		// A JSON header whose opaque can be read but whose fields are wrong gets an error answer.
		rc = dialRaw(t, g.MasterAddr)
		rc.write(frame([]byte(`{"code":"ten","opaque":77,"flag":0,"extFields":{"a":[1,2]}}`), 0, nil))
		if resp, err := rc.readCommand(10 * time.Second); err == nil {
			require.Equal(t, remoting.SystemError, resp.Code, "answer to a bad header: %v", resp)
			require.Equal(t, int32(77), resp.Opaque)
		}

		// A binary (ROCKETMQ) header whose lengths point past its end.
		rc = dialRaw(t, g.MasterAddr)
		bin := []byte{0, 10, 9, 1, 61, 0, 0, 0, 5, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff}
		rc.write(frame(bin, 1, nil))
		if resp, err := rc.readCommand(10 * time.Second); err == nil {
			require.NotEqual(t, remoting.Success, resp.Code, "answer to a truncated binary header: %v", resp)
		}
	})
	t.Run("UnknownCode", func(t *testing.T) {
		resp, err := g.Admin.Invoke(ctx, g.MasterAddr, remoting.NewRequest(9999, nil, nil))
		require.NoError(t, err)
		require.Equal(t, remoting.RequestCodeNotSupported, resp.Code, "remark %q", resp.Remark)
		resp, err = g.Admin.Invoke(ctx, g.SlaveAddr, remoting.NewRequest(9999, nil, nil))
		require.NoError(t, err)
		require.Equal(t, remoting.RequestCodeNotSupported, resp.Code, "remark %q", resp.Remark)
	})
	t.Run("SendToSlave", func(t *testing.T) {
		ext := map[string]string{
			"producerGroup": "pg-raw", "topic": "E2EBadInput", "queueId": "0", "sysFlag": "0",
			"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
			"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
			"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
			"properties": "TAGS\x01T\x02", "bname": BrokerName,
		}
		resp, err := g.Admin.Invoke(ctx, g.SlaveAddr, remoting.NewRequest(remoting.SendMessage, ext, []byte("to-slave")))
		require.NoError(t, err)
		require.Equal(t, remoting.ServiceNotAvailable, resp.Code, "slave answered a send with %d %q", resp.Code, resp.Remark)
	})

	// The brokers keep serving: the connected client sends, a new connection gets a route, and
	// the slave still replicates.
	mustSend(t, bystander, &hist, primitive.NewMessage("E2EBadInput", []byte("after")))
	_, err := g.Route("E2EBadInput")
	require.NoError(t, err)
	rc := dialRaw(t, g.MasterAddr)
	req := remoting.NewRequest(remoting.GetMaxOffset, map[string]string{"topic": "E2EBadInput", "queueId": "0"}, nil)
	req.Opaque = 5
	b, err := remoting.EncodeFrame(nil, req)
	require.NoError(t, err)
	rc.write(b)
	resp, err := rc.readCommand(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, int32(5), resp.Opaque)
	g.WaitSlaveCaughtUp(t)
	checkHistory(t, g, &hist, g.MasterAddr, g.SlaveAddr)
}
