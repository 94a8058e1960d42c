package attacktest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// floodHeartbeat names n new consumer groups (prefix-0 .. prefix-(n-1)), each subscribing to
// one topic.
func floodHeartbeat(clientID, prefix string, n int) []byte {
	var sb strings.Builder
	sb.WriteString(`{"clientID":"` + clientID + `","producerDataSet":[],"consumerDataSet":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"groupName":"` + prefix + "-" + strconv.Itoa(i) + `","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"FloodTopic","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG"}],"unitMode":false}`)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// 40 connections send 25 heartbeats each, every heartbeat naming 100 groups never seen: 100,000
// group names. The broker creates at most autoCreatePerHeartbeat groups plus retry topics per
// heartbeat and autoCreatePerConnection per connection, stops at
// autoCreateSubscriptionGroupLimit groups (set to 3000 here), answers the rest
// SUBSCRIPTION_GROUP_NOT_EXIST, writes the tables in batches, and keeps answering the sends of a
// bystander producer all along. Before the bounds one heartbeat of 800 groups took over 8 s and
// every group was kept forever.
func TestHeartbeatFlood(t *testing.T) {
	const limit = 3000
	f := Start(t, Config{ExtraMaster: []string{"autoCreateSubscriptionGroupLimit=" + strconv.Itoa(limit)}})
	f.SendOK(t, "FloodBystander", []byte("before the flood"))

	stop := make(chan struct{})
	var bystander sync.WaitGroup
	bystander.Add(1)
	var sends int
	var slowest time.Duration
	var sendErr error
	go func() {
		defer bystander.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			if _, err := f.Send(t, "FloodBystander", []byte("during the flood "+strconv.Itoa(i))); err != nil {
				sendErr = err
				return
			}
			slowest = max(slowest, time.Since(start))
			sends++
		}
	}()

	const conns, beats, perBeat = 40, 25, 100
	codes := map[int32]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			cc := remoting.DefaultClientConfig()
			cc.RequestTimeout = 30 * time.Second
			cli := remoting.NewClient(cc) // its own connection
			defer cli.Close()
			for h := 0; h < beats; h++ {
				id := "flood-" + strconv.Itoa(c)
				body := floodHeartbeat(id, id+"-"+strconv.Itoa(h), perBeat)
				resp, err := Invoke(cli, f.MasterAddr, remoting.HeartBeat, nil, body)
				mu.Lock()
				if err != nil {
					codes[-1]++
				} else {
					codes[resp.Code]++
				}
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	took := time.Since(start)
	close(stop)
	bystander.Wait()
	t.Logf("%d heartbeats naming %d groups in %v; answers by code %v; bystander: %d sends, slowest %v", conns*beats, conns*beats*perBeat, took, codes, sends, slowest)
	require.NoError(t, sendErr, "the bystander's sends are answered SEND_OK during the flood")
	require.Zero(t, codes[-1], "every heartbeat answered")
	require.Positive(t, codes[remoting.SubscriptionGroupNotExist])

	st, err := Status(f.MasterHTTP)
	require.NoError(t, err)
	require.EqualValues(t, limit, st["groups"], "the group table stops at the limit")
	require.LessOrEqual(t, st["topics"], float64(limit+20), "one retry topic per group at most")
	refused, err := Metric(f.MasterHTTP, `rmqha_broker_autocreate_refused_total{reason="table_limit"}`)
	require.NoError(t, err)
	require.Positive(t, refused)
	perHB, err := Metric(f.MasterHTTP, `rmqha_broker_autocreate_refused_total{reason="per_heartbeat"}`)
	require.NoError(t, err)
	require.Positive(t, perHB)
	// The tables reach their files in batches, within the flush interval.
	require.Eventually(t, func() bool {
		p, err := Metric(f.MasterHTTP, `rmqha_broker_metadata_pending_changes{table="subscriptionGroups"}`)
		return err == nil && p == 0
	}, 30*time.Second, 50*time.Millisecond)
	writes, err := Metric(f.MasterHTTP, `rmqha_broker_metadata_writes_total{table="subscriptionGroups"}`)
	require.NoError(t, err)
	t.Logf("subscriptionGroup.json rewritten %v times for %d groups", writes, limit)
	require.Less(t, writes, float64(limit/4), "batched, not one rewrite per group")
	fi, err := os.Stat(filepath.Join(f.MasterStore(), "config", "subscriptionGroup.json"))
	require.NoError(t, err)
	require.Less(t, fi.Size(), int64(limit*400), "bounded file")
	f.CheckInvariants(t)
}
