package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rmqha/rmqha/libs/acl"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/sirupsen/logrus"
)

// GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) reach a consumer through
// the broker, as RocketMQ's Broker2Client.callClient does:
//
//	admin --307 {consumerGroup, clientId, jstackEnable}----------> broker
//	broker --307, same ext fields and body-----------------------> the client's connection
//	                                                                (its latest heartbeat)
//	broker <--the client's answer (code, remark, ext, body)-------
//	admin <--that answer, relayed---------------------------------
//
// CONSUME_MESSAGE_DIRECTLY {consumerGroup, clientId, msgId} gets brokerName added and the
// stored message (by its offset msgId) as body before it is forwarded. Refused as RocketMQ
// refuses: SYSTEM_ERROR "The Consumer <g> <id> not online", CONSUME_MSG_TIMEOUT when the client
// does not answer within ClientCallTimeout (10 s), SYSTEM_ERROR "invoke consumer <g> <id>
// Exception: ..." when its connection fails. Unlike RocketMQ the admin's ACL signature fields
// are not forwarded, and a msgId that names no stored message is answered here
// (rocketmq-client-go cannot take an empty body).

// callClientTimeout is how long the broker waits for the client (Broker2Client's 10 s), the
// default of Config.ClientCallTimeout.
const callClientTimeout = 10 * time.Second

func (b *Broker) handleGetConsumerRunningInfo(w remoting.ResponseWriter, req *remoting.Command) {
	b.callConsumer(w, req, req.Body)
}

func (b *Broker) handleConsumeMessageDirectly(w remoting.ResponseWriter, req *remoting.Command) {
	id := req.Ext("msgId")
	_, off, err := commitlog.ParseOffsetMsgID(id)
	if err != nil {
		b.reply(w, req, remoting.SystemError, fmt.Sprintf("msgId %q is not an offset message id: %v", id, err))
		return
	}
	rec, err := b.store.ReadRecord(off)
	if err != nil {
		code := remoting.SystemError
		if errors.Is(err, commitlog.ErrNotFound) || errors.Is(err, commitlog.ErrOffsetTooOld) ||
			errors.Is(err, commitlog.ErrOffsetBeyondEnd) || errors.Is(err, commitlog.ErrBadOffset) {
			code = remoting.QueryNotFound
		}
		b.reply(w, req, code, fmt.Sprintf("no message %s on this broker: %v", id, err))
		return
	}
	b.callConsumer(w, req, rec, "brokerName", b.cfg.BrokerName)
}

// callConsumer forwards req (its code and ext fields, kv added) with body to the connection of
// the consumer req names and relays its answer.
func (b *Broker) callConsumer(w remoting.ResponseWriter, req *remoting.Command, body []byte, kv ...string) {
	group, id := req.Ext("consumerGroup"), req.Ext("clientId")
	var conn *remoting.ServerConn
	for _, m := range b.clients.reg.Consumers(group) {
		if m.ClientID == id {
			conn, _ = m.Conn.(*remoting.ServerConn)
		}
	}
	if group == "" || id == "" || conn == nil {
		b.reply(w, req, remoting.SystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, id))
		return
	}
	ext := make(map[string]string, len(req.ExtFields)+len(kv)/2)
	for k, v := range req.ExtFields {
		switch k {
		case acl.ExtAccessKey, acl.ExtSignature, acl.ExtSecurityToken:
		default:
			ext[k] = v
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		ext[kv[i]] = kv[i+1]
	}
	log := b.log.WithFields(logrus.Fields{"request": remoting.RequestName(req.Code), "group": group, "clientId": id,
		"client": conn.RemoteAddr(), "peer": peerOf(w)})
	ctx, cancel := context.WithTimeout(b.ctx, b.cfg.ClientCallTimeout)
	defer cancel()
	resp, err := conn.SendRequest(ctx, remoting.NewRequest(req.Code, ext, body))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, remoting.ErrTimeout) {
			log.WithError(err).Warn("forwarded request not answered by the client in time")
			b.reply(w, req, remoting.ConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: %v", group, id, err))
			return
		}
		log.WithError(err).Warn("forwarding a request to a client failed")
		b.reply(w, req, remoting.SystemError, fmt.Sprintf("invoke consumer <%s> <%s> Exception: %v", group, id, err))
		return
	}
	out := remoting.NewResponse(req, resp.Code, resp.Remark)
	for k, v := range resp.ExtFields {
		out.ExtFields[k] = v
	}
	out.Body = resp.Body
	_ = w.Write(out)
}
