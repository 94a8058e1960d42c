package broker

import (
	"errors"
	"math"
	"strconv"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
)

// QUERY_MESSAGE limits, RocketMQ's MessageStoreConfig values.
const (
	// queryMaxMsgsNumBatch caps maxNum (maxMsgsNumBatch).
	queryMaxMsgsNumBatch = 64
	// queryDefaultMaxNum replaces maxNum of a unique-key query (defaultQueryMaxNum).
	queryDefaultMaxNum = 32
	// queryMaxBytes bounds one answer's body (the first message always goes).
	queryMaxBytes = 8 << 20
	// extUniqueKeyQuery marks a query by UNIQ_KEY (the client's viewMessage by message id).
	extUniqueKeyQuery = "_UNIQUE_KEY_QUERY"
)

// handleQueryMessage answers QUERY_MESSAGE (QueryMessageRequestHeader: topic, key, maxNum,
// beginTimestamp, endTimestamp) from the message index as RocketMQ's QueryMessageProcessor
// does: the stored messages carrying the key in KEYS or UNIQ_KEY, concatenated in their stored
// encoding, oldest first, with indexLastUpdateTimestamp and indexLastUpdatePhyoffset in the
// header; QUERY_NOT_FOUND when none. Unlike RocketMQ the broker drops hash collisions itself.
// Masters and slaves answer alike, each from the log it holds.
func (b *Broker) handleQueryMessage(w remoting.ResponseWriter, req *remoting.Command) {
	topic, key := req.Ext("topic"), req.Ext("key")
	if topic == "" || key == "" {
		b.reply(w, req, remoting.SystemError, "missing ext topic or key")
		return
	}
	maxNum, err := req.ExtInt32In("maxNum", math.MinInt32, math.MaxInt32)
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	begin, err := req.ExtInt64("beginTimestamp")
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	end, err := req.ExtInt64("endTimestamp")
	if err != nil {
		b.reply(w, req, remoting.SystemError, err.Error())
		return
	}
	if req.Ext(extUniqueKeyQuery) == "true" {
		maxNum = queryDefaultMaxNum
	}
	maxNum = min(maxNum, queryMaxMsgsNumBatch)
	res, err := b.store.QueryIndex(topic, key, int(maxNum), begin, end, queryMaxBytes)
	if errors.Is(err, commitlog.ErrIndexDisabled) {
		b.reply(w, req, remoting.QueryNotFound, "can not find message: the message index is off (messageIndexEnable=false)")
		return
	}
	if err != nil && len(res.Records) == 0 {
		b.log.WithError(err).WithField("topic", topic).Warn("message index query failed")
		b.reply(w, req, remoting.SystemError, "query message index: "+err.Error())
		return
	}
	ts, phy := strconv.FormatInt(res.LastUpdateTimestamp, 10), strconv.FormatInt(res.LastUpdatePhyOffset, 10)
	if len(res.Records) == 0 {
		resp := remoting.NewResponse(req, remoting.QueryNotFound, "can not find message, maybe time range not correct")
		resp.ExtFields["indexLastUpdateTimestamp"] = ts
		resp.ExtFields["indexLastUpdatePhyoffset"] = phy
		_ = w.Write(resp)
		return
	}
	n := 0
	for _, r := range res.Records {
		n += len(r)
	}
	body := make([]byte, 0, n)
	for _, r := range res.Records {
		body = append(body, r...)
	}
	b.replyOK(w, req, body, "indexLastUpdateTimestamp", ts, "indexLastUpdatePhyoffset", phy)
}
