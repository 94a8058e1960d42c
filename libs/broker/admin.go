package broker

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/rmqha/rmqha/libs/meta"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
)

func (b *Broker) handleUpdateAndCreateTopic(w remoting.ResponseWriter, req *remoting.Command) {
	topic := req.Ext("topic")
	if err := meta.ValidateTopicName(topic); err != nil {
		b.reply(w, req, remoting.SystemError, "topic "+strconv.Quote(topic)+" is not allowed: "+err.Error())
		return
	}
	if meta.IsSystemTopic(topic, b.cfg.BrokerClusterName, b.cfg.BrokerName) {
		b.reply(w, req, remoting.SystemError, "The topic["+topic+"] is conflict with system topic.")
		return
	}
	tc := route.NewTopicConfig(topic)
	if old, ok := b.tables.Topics.Get(topic); ok {
		tc = old.Clone()
	}
	num := func(key string, dst *int32) bool {
		if req.Ext(key) == "" {
			return true
		}
		v, err := req.ExtInt32In(key, 0, math.MaxInt32)
		if err != nil {
			b.reply(w, req, remoting.SystemError, err.Error())
			return false
		}
		*dst = v
		return true
	}
	if !num("readQueueNums", &tc.ReadQueueNums) || !num("writeQueueNums", &tc.WriteQueueNums) ||
		!num("perm", &tc.Perm) || !num("topicSysFlag", &tc.TopicSysFlag) {
		return
	}
	if f := req.Ext("topicFilterType"); f != "" {
		tc.TopicFilterType = f
	}
	if o := req.Ext("order"); o != "" {
		tc.Order = o == "true"
	}
	changed, err := b.tables.Topics.Put(tc)
	if err != nil {
		b.reply(w, req, remoting.SystemError, "topic "+topic+" updated in memory but not persisted: "+err.Error())
		return
	}
	if changed {
		b.log.WithField("topic", topic).Info("topic created or updated by admin request")
		b.triggerRegister()
	}
	b.replyOK(w, req, nil)
}

func (b *Broker) handleDeleteTopic(w remoting.ResponseWriter, req *remoting.Command) {
	topic := req.Ext("topic")
	if topic == "" {
		b.reply(w, req, remoting.SystemError, "missing ext topic")
		return
	}
	if meta.IsSystemTopic(topic, b.cfg.BrokerClusterName, b.cfg.BrokerName) {
		b.reply(w, req, remoting.SystemError, "The topic["+topic+"] is conflict with system topic.")
		return
	}
	existed, err := b.tables.Topics.Delete(topic)
	if err != nil {
		b.reply(w, req, remoting.SystemError, "deleting topic "+topic+": "+err.Error())
		return
	}
	if derr := b.store.DeleteTopic(topic); derr != nil {
		b.log.WithError(derr).WithField("topic", topic).Warn("deleting consume queues failed")
	}
	b.bstats.OnTopicDeleted(topic)
	if existed {
		b.log.WithField("topic", topic).Info("topic deleted by admin request")
		b.triggerRegister()
	}
	b.replyOK(w, req, nil)
}

func (b *Broker) handleGetAllTopicConfig(w remoting.ResponseWriter, req *remoting.Command) {
	b.replyOK(w, req, b.tables.Topics.Snapshot())
}

func (b *Broker) handleUpdateAndCreateGroup(w remoting.ResponseWriter, req *remoting.Command) {
	var gc meta.SubscriptionGroupConfig
	if err := json.Unmarshal(req.Body, &gc); err != nil || gc.GroupName == "" {
		msg := "body is not a subscription group config with a groupName"
		if err != nil {
			msg += ": " + err.Error()
		}
		b.reply(w, req, remoting.SystemError, msg)
		return
	}
	if err := meta.ValidateTopicName(gc.GroupName); err != nil {
		b.reply(w, req, remoting.SystemError, "group "+strconv.Quote(gc.GroupName)+" is not allowed: "+err.Error())
		return
	}
	// Counts and broker ids are never negative (the JSON decoder already refused values
	// beyond the fields' 32/64 bits).
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"retryQueueNums", int64(gc.RetryQueueNums)}, {"retryMaxTimes", int64(gc.RetryMaxTimes)},
		{"brokerId", gc.BrokerID}, {"whichBrokerWhenConsumeSlowly", gc.WhichBrokerWhenConsumeSlowly},
	} {
		if f.v < 0 {
			b.reply(w, req, remoting.SystemError, fmt.Sprintf("subscription group %s: %s=%d is negative", gc.GroupName, f.name, f.v))
			return
		}
	}
	if _, err := b.tables.Groups.Put(gc); err != nil {
		b.reply(w, req, remoting.SystemError, "group updated in memory but not persisted: "+err.Error())
		return
	}
	b.replyOK(w, req, nil)
}

func (b *Broker) handleDeleteGroup(w remoting.ResponseWriter, req *remoting.Command) {
	group := req.Ext("groupName")
	if group == "" {
		b.reply(w, req, remoting.SystemError, "missing ext groupName")
		return
	}
	if _, err := b.tables.Groups.Delete(group); err != nil {
		b.reply(w, req, remoting.SystemError, "deleting group "+group+": "+err.Error())
		return
	}
	if req.Ext("cleanOffset") == "true" {
		b.tables.Offsets.RemoveGroup(group)
	}
	b.bstats.OnGroupDeleted(group)
	b.replyOK(w, req, nil)
}

func (b *Broker) handleGetAllGroups(w remoting.ResponseWriter, req *remoting.Command) {
	b.replyOK(w, req, b.tables.Groups.Snapshot())
}

func (b *Broker) handleGetAllConsumerOffset(w remoting.ResponseWriter, req *remoting.Command) {
	b.replyOK(w, req, b.tables.Offsets.Snapshot())
}

func (b *Broker) handleGetAllDelayOffset(w remoting.ResponseWriter, req *remoting.Command) {
	b.replyOK(w, req, b.tables.Delay.Snapshot())
}

// handleRuntimeInfo answers a KVTable body ({"table":{...}}) in the spirit of Java's
// GET_BROKER_RUNTIME_INFO, with this broker's own keys.
func (b *Broker) handleRuntimeInfo(w remoting.ResponseWriter, req *remoting.Command) {
	st := b.Status()
	t := map[string]string{
		"brokerVersionDesc":      "V4_9_8",
		"brokerVersion":          strconv.Itoa(int(remoting.VersionV4_9_8)),
		"brokerRole":             st.Role,
		"commitLogMinOffset":     strconv.FormatInt(st.MinOffset, 10),
		"commitLogMaxOffset":     strconv.FormatInt(st.MaxOffset, 10),
		"commitLogFlushedOffset": strconv.FormatInt(st.FlushedOffset, 10),
		"dispatchedOffset":       strconv.FormatInt(st.DispatchedOffset, 10),
		"pullHeldRequests":       strconv.Itoa(st.HeldPulls),
		"consumerChannels":       strconv.Itoa(st.Consumers),
		"producerChannels":       strconv.Itoa(st.Producers),
		"sendRequests":           strconv.FormatUint(st.SendRequests, 10),
		"pullRequests":           strconv.FormatUint(st.PullRequests, 10),
		"storeReadOnly":          strconv.FormatBool(st.StoreError != ""),
	}
	b.statsRuntimeInfo(t)
	b.sqlRuntimeInfo(t)
	b.replyRuntimeInfo(t)
	b.txnRuntimeInfo(t)
	b.timerRuntimeInfo(t, st.Timer)
	if st.HAMaster != nil {
		t["haInSyncCount"] = strconv.Itoa(st.HAMaster.InSyncCount)
		t["haEpoch"] = strconv.FormatInt(st.HAMaster.Epoch, 10)
		t["haConfirmedOffset"] = strconv.FormatInt(st.HAMaster.Confirmed, 10)
		t["haSlaveCount"] = strconv.Itoa(len(st.HAMaster.Slaves))
		if js, err := json.Marshal(st.HAMaster.Slaves); err == nil {
			t["haSlaves"] = string(js) // per slave: addr, id, ack offset, lag, in sync
		}
	}
	if st.HASlave != nil {
		t["haMasterAddr"] = st.HASlave.MasterAddr
		t["haConnected"] = strconv.FormatBool(st.HASlave.Connected)
		t["haLagBytes"] = strconv.FormatInt(st.HASlave.LagBytes, 10)
		t["haLagSeconds"] = strconv.FormatFloat(st.HASlave.LagSeconds, 'f', 3, 64)
		t["haState"] = st.HASlave.State
	}
	if h := b.statusAddr(); h != "" {
		t["httpAddr"] = h
		if b.cfg.HTTPTLSEnable {
			t["httpTls"] = "true"
		}
	}
	if st.Failover != nil {
		if js, err := json.Marshal(st.Failover); err == nil {
			t["failover"] = string(js) // lock holder, epoch, in-sync set, lease left, fenced
		}
	}
	body := []byte(`{"table":`)
	body = route.AppendStringMap(body, t)
	body = append(body, '}')
	b.replyOK(w, req, body)
}
