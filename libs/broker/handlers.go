package broker

import (
	"github.com/rmqha/rmqha/libs/remoting"
)

// registerHandlers binds every supported request code; anything else gets
// REQUEST_CODE_NOT_SUPPORTED from the remoting server.
func (b *Broker) registerHandlers() {
	h := func(code int32, f func(w remoting.ResponseWriter, req *remoting.Command)) {
		b.srv.HandleFunc(code, f)
	}
	// Sending.
	// Single sends run on their connection's reader and leave the store write to the end of
	// the reader's burst (inlineSend).
	send := &inlineSend{b: b}
	b.srv.Handle(remoting.SendMessage, send)
	b.srv.Handle(remoting.SendMessageV2, send)
	h(remoting.SendBatchMessage, b.handleSend)
	h(remoting.ConsumerSendMsgBack, b.handleSendBack)
	h(remoting.SendReplyMessage, b.handleSendReply)
	h(remoting.SendReplyMessageV2, b.handleSendReply)
	h(remoting.EndTransaction, b.handleEndTransaction)
	// Consuming.
	h(remoting.PullMessage, b.handlePull)
	h(remoting.QueryConsumerOffset, b.handleQueryConsumerOffset)
	h(remoting.UpdateConsumerOffset, b.handleUpdateConsumerOffset)
	h(remoting.GetMaxOffset, b.handleGetMaxOffset)
	h(remoting.GetMinOffset, b.handleGetMinOffset)
	h(remoting.GetEarliestMsgStoretime, b.handleEarliestMsgStoreTime)
	h(remoting.SearchOffsetByTimestamp, b.handleSearchOffsetByTimestamp)
	h(remoting.ViewMessageByID, b.handleViewMessageByID)
	h(remoting.QueryMessage, b.handleQueryMessage)
	h(remoting.InvokeBrokerToResetOffset, b.handleResetOffset)
	h(remoting.CloneGroupOffset, b.handleCloneGroupOffset)
	h(remoting.QueryConsumeTimeSpan, b.handleQueryConsumeTimeSpan)
	h(remoting.GetConsumerConnectionList, b.handleConsumerConnectionList)
	h(remoting.GetProducerConnectionList, b.handleProducerConnectionList)
	h(remoting.GetConsumeStats, b.handleConsumeStats)
	h(remoting.GetTopicStatsInfo, b.handleTopicStatsInfo)
	h(remoting.QueryTopicConsumeByWho, b.handleTopicConsumeByWho)
	h(remoting.GetBrokerConsumeStats, b.handleBrokerConsumeStats)
	h(remoting.GetSystemTopicListFromBroker, b.handleSystemTopicList)
	h(remoting.ViewBrokerStatsData, b.handleViewBrokerStatsData)
	h(remoting.GetConsumerRunningInfo, b.handleGetConsumerRunningInfo)
	h(remoting.ConsumeMessageDirectly, b.handleConsumeMessageDirectly)
	// Clients.
	h(remoting.HeartBeat, b.withClientLang(b.handleHeartbeat))
	h(remoting.UnregisterClient, b.handleUnregisterClient)
	h(remoting.GetConsumerListByGroup, b.handleGetConsumerList)
	h(remoting.CheckClientConfig, b.handleCheckClientConfig)
	h(remoting.LockBatchMQ, b.handleLockBatch)
	h(remoting.UnlockBatchMQ, b.handleUnlockBatch)
	// Metadata and admin.
	h(remoting.UpdateAndCreateTopic, b.handleUpdateAndCreateTopic)
	h(remoting.DeleteTopicInBroker, b.handleDeleteTopic)
	h(remoting.GetAllTopicConfig, b.handleGetAllTopicConfig)
	h(remoting.UpdateAndCreateSubscriptionGroup, b.handleUpdateAndCreateGroup)
	h(remoting.DeleteSubscriptionGroup, b.handleDeleteGroup)
	h(remoting.GetAllSubscriptionGroupConfig, b.handleGetAllGroups)
	h(remoting.GetAllConsumerOffset, b.handleGetAllConsumerOffset)
	h(remoting.GetAllDelayOffset, b.handleGetAllDelayOffset)
	h(remoting.GetBrokerRuntimeInfo, b.handleRuntimeInfo)
	h(remoting.GetBrokerConfig, b.handleGetBrokerConfig)
	h(remoting.UpdateBrokerConfig, b.handleUpdateBrokerConfig)
}

// reply answers req with a bodyless response.
func (b *Broker) reply(w remoting.ResponseWriter, req *remoting.Command, code int32, remark string) {
	_ = w.Write(remoting.NewResponse(req, code, remark))
}

// replyOK answers SUCCESS with optional ext fields (key, value pairs) and body.
func (b *Broker) replyOK(w remoting.ResponseWriter, req *remoting.Command, body []byte, kv ...string) {
	resp := remoting.NewResponse(req, remoting.Success, "")
	for i := 0; i+1 < len(kv); i += 2 {
		resp.ExtFields[kv[i]] = kv[i+1]
	}
	resp.Body = body
	_ = w.Write(resp)
}
