package broker

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/require"
)

func testLogger() logrus.FieldLogger {
	l := logrus.New()
	l.SetLevel(logrus.WarnLevel)
	return l
}

// testHASecret is the HA secret every in-process broker of a test run shares, drawn once per run.
var testHASecret = hawiretest.NewSecret()

// testRegistrationSecret is every in-process broker's registration secret; newTestClient signs
// with it, so admin writes pass the ACL-off admin guard.
var testRegistrationSecret = hawiretest.NewSecret()

func testConfig(t testing.TB) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.HASecret = testHASecret
	cfg.RegistrationSecret = testRegistrationSecret
	cfg.ListenPort = 0
	cfg.BindAddress = "127.0.0.1"
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.StorePathRootDir = t.TempDir()
	cfg.MappedFileSizeCommitLog = 1 << 20
	cfg.MaxMessageSize = 256 << 10
	cfg.FlushIntervalCommitLog = 20 * time.Millisecond
	cfg.HASendHeartbeatInterval = 500 * time.Millisecond
	cfg.HAHousekeepingInterval = 5 * time.Second
	// Short delay levels so retries and delayed messages come back within a test.
	cfg.MessageDelayLevel = "20ms 40ms 60ms 80ms 100ms 120ms 140ms 160ms 180ms 200ms 220ms 240ms 260ms 280ms 300ms 320ms 340ms 360ms"
	return cfg
}

func startBroker(t testing.TB, cfg Config) *Broker {
	t.Helper()
	b, err := New(cfg, testLogger())
	require.NoError(t, err)
	require.NoError(t, b.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
	})
	return b
}

func newTestClient(t testing.TB) *remoting.Client {
	t.Helper()
	cc := remoting.DefaultClientConfig()
	cc.RequestTimeout = 10 * time.Second
	cc.Signer = acl.Signer(acl.BrokerAccessKey, testRegistrationSecret)
	c := remoting.NewClient(cc)
	t.Cleanup(func() { c.Close() })
	return c
}

func invoke(t testing.TB, c *remoting.Client, addr string, code int32, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	resp, err := c.Invoke(ctx, addr, remoting.NewRequest(code, ext, body))
	require.NoError(t, err)
	return resp
}

func props(kv ...string) string {
	var s string
	for i := 0; i+1 < len(kv); i += 2 {
		s += kv[i] + "\x01" + kv[i+1] + "\x02"
	}
	return s
}

func sendExt(topic string, queueID int, properties string) map[string]string {
	return map[string]string{
		"producerGroup": "pg", "topic": topic, "queueId": strconv.Itoa(queueID), "sysFlag": "0",
		"bornTimestamp": strconv.FormatInt(time.Now().UnixMilli(), 10), "flag": "0",
		"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0",
		"defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
		"properties": properties, "bname": "broker-a",
	}
}

func send(t *testing.T, c *remoting.Client, addr, topic string, queueID int, tag string, body string) *remoting.Command {
	t.Helper()
	p := props("UNIQ_KEY", "ID"+body)
	if tag != "" {
		p = props("TAGS", tag, "UNIQ_KEY", "ID"+body)
	}
	return invoke(t, c, addr, remoting.SendMessage, sendExt(topic, queueID, p), []byte(body))
}

func heartbeatBody(clientID, group string, subs map[string]string) []byte {
	s := `{"clientID":"` + clientID + `","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"` + group +
		`","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[`
	first := true
	for topic, expr := range subs {
		if !first {
			s += ","
		}
		first = false
		s += `{"classFilterMode":false,"topic":"` + topic + `","subString":"` + expr + `","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}`
	}
	return []byte(s + `],"unitMode":false}]}`)
}

func pullExt(group, topic string, queueID int, offset int64, sysFlag int, suspendMs int) map[string]string {
	return map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(queueID),
		"queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32", "sysFlag": strconv.Itoa(sysFlag),
		"commitOffset": "-1", "suspendTimeoutMillis": strconv.Itoa(suspendMs), "subscription": "",
		"subVersion": "0", "expressionType": "TAG",
	}
}

func decodeRecords(t *testing.T, body []byte) []*commitlog.Record {
	t.Helper()
	var out []*commitlog.Record
	for len(body) > 0 {
		r, n, err := commitlog.DecodeRecord(body)
		require.NoError(t, err)
		out = append(out, r)
		body = body[n:]
	}
	return out
}

// batchBody encodes a SEND_BATCH_MESSAGE body as the Go client does.
func batchBody(bodies []string, properties []string) []byte {
	var out []byte
	for i, b := range bodies {
		p := properties[i]
		total := 20 + len(b) + 2 + len(p)
		out = binary.BigEndian.AppendUint32(out, uint32(total))
		out = binary.BigEndian.AppendUint32(out, 0)
		out = binary.BigEndian.AppendUint32(out, 0)
		out = binary.BigEndian.AppendUint32(out, 0)
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
		out = binary.BigEndian.AppendUint16(out, uint16(len(p)))
		out = append(out, p...)
	}
	return out
}

func mustParseMsgID(t *testing.T, id string) (string, int64) {
	t.Helper()
	ap, off, err := commitlog.ParseOffsetMsgID(id)
	require.NoError(t, err)
	return ap.String(), off
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func httpGet(t *testing.T, url string, wantCode int) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, wantCode, resp.StatusCode, string(body))
	return string(body)
}
