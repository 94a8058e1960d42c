package broker

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
)

// floodBody is a heartbeat naming n new consumer groups, each subscribing to one topic.
func floodBody(clientID string, n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"clientID":"` + clientID + `","producerDataSet":[],"consumerDataSet":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"groupName":"` + clientID + `-g` + strconv.Itoa(i) + `","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}],"unitMode":false}`)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// TestMeasureHeartbeatFlood times one heartbeat naming 200, 400, 800 and 5000 new groups,
// with the default bounds and with every bound lifted (all groups created: the cost of the
// batched table writes), and how long until the tables are in their files. It only reports
// (set RMQHA_MEASURE=1): speed is never a test failure.
func TestMeasureHeartbeatFlood(t *testing.T) {
	if os.Getenv("RMQHA_MEASURE") == "" {
		t.Skip("set RMQHA_MEASURE=1 to measure")
	}
	for _, lifted := range []bool{false, true} {
		for _, n := range []int{200, 400, 800, 5000} {
			cfg := testConfig(t)
			if lifted {
				cfg.AutoCreatePerHeartbeat, cfg.AutoCreatePerConnection, cfg.AutoCreateSubscriptionGroupLimit = 0, 0, 0
				cfg.HeartbeatMaxGroups, cfg.HeartbeatMaxSubscriptions = 100000, 100000
			}
			b := startBroker(t, cfg)
			cc := remoting.DefaultClientConfig()
			cc.RequestTimeout = 20 * time.Minute
			c := remoting.NewClient(cc)
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			resp, err := c.Invoke(ctx, b.Addr(), remoting.NewRequest(remoting.HeartBeat, nil, floodBody("c"+strconv.Itoa(n), n)))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			answered := time.Since(start)
			for b.tables.Groups.Pending() > 0 || b.tables.Topics.Pending() > 0 {
				time.Sleep(time.Millisecond)
			}
			t.Logf("lifted=%v groups=%d code=%d answered=%v durable=%v groups_in_table=%d topics=%d writes(groups,topics)=%d,%d",
				lifted, n, resp.Code, answered, time.Since(start), b.tables.Groups.Len(), b.tables.Topics.Len(), b.tables.Groups.Writes(), b.tables.Topics.Writes())
			c.Close()
		}
	}
}
