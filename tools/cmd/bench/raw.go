package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/rmqha/rmqha/libs/remoting"
)

// rawProducer sends SEND_MESSAGE frames straight to the masters over its own connection,
// round-robin over the writable queues: no client library in the way, and as little work per
// message as the protocol allows. Each sender slot (one, or -inflight in async mode) owns a
// request built once (its ext map and body reused: the client encodes a request into its
// write queue before Invoke or InvokeAsync returns, so the slot may change them for the next
// send) and changes only the queue, the birth time and the body's send time per message.
//
// In async mode the slots are a window of calls in flight without a goroutine each: a slot's
// callback (remoting.Client.InvokeAsync), run by the connection's reader, records the answer
// and sends the slot's next message (async.go).
type rawProducer struct {
	cfg    Config
	st     *stats
	cli    *remoting.Client
	queues []queueRef
	qids   []string // queueId of each queue, formatted once
	fixed  *sendTemplates
	next   atomic.Int64
	// mapPath sends every request with the ext map and reads answers into a map, as signed
	// runs do: BenchmarkRawProduce's same-run anchor.
	mapPath bool
	// blocking runs async mode as a goroutine per slot blocked in Invoke, as it ran before the
	// callback window: BenchmarkRawProduce's other anchor.
	blocking bool
}

func newRawProducer(cfg Config, r *route, i int, st *stats) (*rawProducer, error) {
	if len(r.write) == 0 {
		return nil, fmt.Errorf("topic %s has no writable queue on a master", cfg.Topic)
	}
	p := &rawProducer{cfg: cfg, st: st, cli: newRemotingClient(cfg.SendTimeout, cfg.tlsClient, cfg.credentials()), queues: r.write}
	for _, q := range r.write {
		p.qids = append(p.qids, strconv.Itoa(q.queueID))
	}
	var err error
	if p.fixed, err = newSendTemplates(cfg.Topic, r.write); err != nil {
		p.close()
		return nil, err
	}
	p.next.Store(int64(i))
	return p, nil
}

func (p *rawProducer) close() { _ = p.cli.Close() }

// sendSlot is one sender's reusable request.
type sendSlot struct {
	req    *remoting.Command
	bornMs int64
	hdr    *sendHeader // nil: the header is the ext map (signed requests)
	answer sendAnswer
}

// sendAnswer is what the producer takes from a send's answer header, decoded typed
// (remoting.Client.InvokeExt) into the slot's own fields instead of a map per answer: the
// message id and the queue offset, as a client's SendResult holds them.
type sendAnswer struct {
	msgID       []byte
	queueOffset int64
}

func (a *sendAnswer) DecodeExt(k, v []byte) {
	switch string(k) {
	case "msgId":
		a.msgID = append(a.msgID[:0], v...)
	case "queueOffset":
		a.queueOffset, _ = strconv.ParseInt(string(v), 10, 64)
	}
}

// sendHeader is SEND_MESSAGE's custom header kept typed and written straight into the frame
// (Command.ExtAppend), in the sorted key order the map encoding uses, so the frame is byte for
// byte the one the map would give (TestSendHeaderBytes) without a map walk, a key sort and
// a JSON escape of fourteen keys per message: everything but the birth time (and, with -keys,
// the properties) is copied from templates encoded once per queue. A signer signs ExtFields
// only, so signed requests keep the map.
type sendHeader struct {
	fixed      *sendTemplates
	queue      int // index of the message's queue in the producer's queues
	properties string
	bornMs     int64
}

// sendTemplates are the runs of fixed fields around the changing ones, in key order: per
// queue, what comes before the birth time and what follows it.
type sendTemplates struct {
	defaults *remoting.ExtTemplate // from defaultTopic to producerGroup
	queues   []queueTemplates      // in the producer's queue order
}

// queueTemplates are one queue's fixed runs: head before bornTimestamp (batch, bname); rest
// after it when properties is empty (defaults, properties, queueId, the tail); tail after
// properties when a message sets them (-keys: queueId and the tail).
type queueTemplates struct {
	head, rest, tail *remoting.ExtTemplate
}

func newSendTemplates(topic string, queues []queueRef) (*sendTemplates, error) {
	defaults := []string{"defaultTopic", "TBW102", "defaultTopicQueueNums", "4", "flag", "0",
		"maxReconsumeTimes", "0", "producerGroup", "bench-pg"}
	t := &sendTemplates{}
	var err error
	if t.defaults, err = remoting.NewExtTemplate(defaults...); err != nil {
		return nil, err
	}
	for _, q := range queues {
		tail := []string{"queueId", strconv.Itoa(q.queueID), "reconsumeTimes", "0", "sysFlag", "0", "topic", topic, "unitMode", "false"}
		var qt queueTemplates
		if qt.head, err = remoting.NewExtTemplate("batch", "false", "bname", q.brokerName); err != nil {
			return nil, err
		}
		if qt.rest, err = remoting.NewExtTemplate(append(append(defaults[:len(defaults):len(defaults)], "properties", ""), tail...)...); err != nil {
			return nil, err
		}
		if qt.tail, err = remoting.NewExtTemplate(tail...); err != nil {
			return nil, err
		}
		t.queues = append(t.queues, qt)
	}
	return t, nil
}

func (h *sendHeader) AppendExt(w remoting.ExtWriter) remoting.ExtWriter {
	q := &h.fixed.queues[h.queue]
	w.Template(q.head)
	w.Int("bornTimestamp", h.bornMs)
	if h.properties == "" {
		w.Template(q.rest)
		return w
	}
	w.Template(h.fixed.defaults)
	w.String("properties", h.properties)
	w.Template(q.tail)
	return w
}

func (p *rawProducer) newSlot() *sendSlot {
	body := p.st.body(p.cfg.Size)
	if p.cfg.credentials().Empty() && !p.mapPath {
		h := &sendHeader{fixed: p.fixed}
		req := remoting.NewRequest(remoting.SendMessage, nil, body)
		req.ExtFields, req.ExtAppend = nil, h
		return &sendSlot{req: req, hdr: h}
	}
	ext := map[string]string{
		"producerGroup": "bench-pg", "topic": p.cfg.Topic, "queueId": "0", "sysFlag": "0",
		"bornTimestamp": "0", "flag": "0", "reconsumeTimes": "0",
		"unitMode": "false", "maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"batch": "false", "properties": "", "bname": "",
	}
	return &sendSlot{req: remoting.NewRequest(remoting.SendMessage, ext, body)}
}

// request readies the slot's request for the next queue and returns the address to send to.
func (p *rawProducer) request(s *sendSlot) string { return p.requestAt(s, time.Now()) }

// requestAt is request with the send time taken by the caller.
func (p *rawProducer) requestAt(s *sendSlot, now time.Time) string {
	k := int(p.next.Add(1)-1) % len(p.queues)
	q := p.queues[k]
	if h := s.hdr; h != nil { // typed: numbers are written as they are encoded
		h.bornMs, h.queue = now.UnixMilli(), k
	} else {
		ext := s.req.ExtFields
		ext["queueId"] = p.qids[k]
		ext["bname"] = q.brokerName
		if ms := now.UnixMilli(); ms != s.bornMs { // a new string at most once a millisecond
			s.bornMs = ms
			ext["bornTimestamp"] = strconv.FormatInt(ms, 10)
		}
	}
	binary.BigEndian.PutUint64(s.req.Body[8:16], uint64(now.UnixNano()))
	if p.cfg.Keys {
		if s.hdr != nil {
			s.hdr.properties = p.keyProperties()
		} else {
			s.req.ExtFields["properties"] = p.keyProperties()
		}
	}
	return q.addrs[0]
}

// keyProperties is one message's UNIQ_KEY and KEYS (-keys): the run id and a sequence number,
// unique per message.
func (p *rawProducer) keyProperties() string {
	n := p.st.keySeq.Add(1)
	b := make([]byte, 0, 80)
	b = append(b, "UNIQ_KEY\x01"...)
	b = fmt.Appendf(b, "%016X%016X", p.st.runID, n)
	b = append(b, "\x02KEYS\x01"...)
	b = append(b, p.st.keyPrefix()...)
	b = strconv.AppendUint(b, n, 10)
	return string(append(b, '\x02'))
}

// sendStatus maps a send response code to its status name, or an error.
func sendStatus(resp *remoting.Command) (string, error) {
	switch resp.Code {
	case remoting.Success:
		return StatusOK, nil
	case remoting.FlushDiskTimeout:
		return StatusFlushDiskTimeout, nil
	case remoting.FlushSlaveTimeout:
		return StatusFlushSlaveTimeout, nil
	case remoting.SlaveNotAvailable:
		return StatusSlaveNotAvailable, nil
	}
	return "", fmt.Errorf("CODE: %d, DESC: %s", resp.Code, resp.Remark)
}

func (p *rawProducer) run(ctx context.Context, stop <-chan struct{}) error {
	if p.cfg.Mode == ModeOneway {
		defer p.barrier(ctx)
	}
	slots := 1
	if p.cfg.Mode == ModeAsync {
		if !p.blocking {
			p.runWindow(stop)
			return nil
		}
		slots = p.cfg.Inflight
	}
	var wg sync.WaitGroup
	for i := 0; i < slots; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.sendLoop(ctx, stop, p.newSlot())
		}()
	}
	wg.Wait()
	return nil
}

// sendLoop sends from one slot until stop or until the run's message count is reached.
func (p *rawProducer) sendLoop(ctx context.Context, stop <-chan struct{}, s *sendSlot) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if !p.st.ticket(p.cfg.N) {
			return
		}
		addr := p.request(s)
		start := time.Now()
		if p.cfg.Mode == ModeOneway {
			err := p.cli.InvokeOneway(ctx, addr, s.req)
			p.st.sendDone(StatusOneway, time.Since(start), err)
			continue
		}
		p.invoke(ctx, addr, s, start)
	}
}

// barrier makes one round trip on every connection used: the connection writes in order, so
// its answer means every oneway frame queued before it left this process.
func (p *rawProducer) barrier(ctx context.Context) {
	done := map[string]bool{}
	for _, q := range p.queues {
		addr := q.addrs[0]
		if done[addr] {
			continue
		}
		done[addr] = true
		bctx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
		ext := map[string]string{"topic": p.cfg.Topic, "queueId": strconv.Itoa(q.queueID), "bname": q.brokerName}
		if _, err := p.cli.Invoke(bctx, addr, remoting.NewRequest(remoting.GetMaxOffset, ext, nil)); err != nil {
			p.st.noteErr(fmt.Errorf("after oneway sends to %s: %w", addr, err))
		}
		cancel()
	}
}

func (p *rawProducer) invoke(ctx context.Context, addr string, s *sendSlot, start time.Time) {
	// The client's request timeout is the send timeout: a run context without a deadline
	// needs no context of its own per message.
	if _, ok := ctx.Deadline(); ok {
		ictx, cancel := context.WithTimeout(ctx, p.cfg.SendTimeout)
		defer cancel()
		ctx = ictx
	}
	s.answer.queueOffset = -1
	var resp *remoting.Command
	var err error
	if p.mapPath {
		if resp, err = p.cli.Invoke(ctx, addr, s.req); err == nil {
			for k, v := range resp.ExtFields {
				s.answer.DecodeExt([]byte(k), []byte(v))
			}
			resp.ReleaseExt()
		}
	} else {
		resp, err = p.cli.InvokeExt(ctx, addr, s.req, &s.answer)
	}
	if err != nil {
		p.st.sendDone("", 0, err)
		return
	}
	status, err := s.status(resp)
	p.st.sendDone(status, time.Since(start), err)
}

// status is the send status of resp, the answer to the slot's request decoded into s.answer;
// an OK answer without a queue offset is an error.
func (s *sendSlot) status(resp *remoting.Command) (string, error) {
	status, err := sendStatus(resp)
	if status == StatusOK && s.answer.queueOffset < 0 {
		err = fmt.Errorf("%s answer without a queueOffset", status)
	}
	return status, err
}

// rawConsumer pulls its share of the queues (queue i, i+N, ...) from the master or the slave
// with long-polling PULL_MESSAGE requests, after registering the group's subscription there
// with a HEART_BEAT.
type rawConsumer struct {
	cfg      Config
	st       *stats
	cli      *remoting.Client
	group    string
	clientID string
	queues   []queueRef
	offsets  []int64
	all      bool
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

func newRawConsumer(cfg Config, a *admin, r *route, group string, i int, st *stats, all bool) (*rawConsumer, error) {
	c := &rawConsumer{cfg: cfg, st: st, cli: newRemotingClient(10*time.Second, cfg.tlsClient, cfg.credentials()), group: group, all: all,
		clientID: fmt.Sprintf("127.0.0.1@bench-%d-%x-%d", os.Getpid(), st.runID&0xffffff, i)}
	for k, q := range r.read {
		if k%cfg.Consumers == i {
			c.queues = append(c.queues, q)
		}
	}
	// Start at the current end unless draining what is there already.
	for _, q := range c.queues {
		off := int64(0)
		if !all {
			var err error
			if off, err = queryOffset(a.cli, q, cfg.Topic, remoting.GetMaxOffset); err != nil {
				return nil, err
			}
		}
		c.offsets = append(c.offsets, off)
	}
	return c, nil
}

func queryOffset(cli *remoting.Client, q queueRef, topic string, code int32) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(q.queueID), "bname": q.brokerName}
	resp, err := cli.Invoke(ctx, q.addrs[0], remoting.NewRequest(code, ext, nil))
	if err != nil {
		return 0, err
	}
	if resp.Code != remoting.Success {
		return 0, fmt.Errorf("offset of %s/%d: code %d %s", topic, q.queueID, resp.Code, resp.Remark)
	}
	return resp.ExtInt64("offset")
}

func (c *rawConsumer) target(q queueRef) (string, error) {
	id := int64(0)
	if c.cfg.PullFrom == "slave" {
		id = 1
	}
	if a := q.addrs[id]; a != "" {
		return a, nil
	}
	return "", fmt.Errorf("no broker with id %d for %s in the route", id, q.brokerName)
}

func (c *rawConsumer) heartbeat(ctx context.Context, addr string) error {
	type sub struct {
		ClassFilterMode bool     `json:"classFilterMode"`
		Topic           string   `json:"topic"`
		SubString       string   `json:"subString"`
		TagsSet         []string `json:"tagsSet"`
		CodeSet         []string `json:"codeSet"`
		SubVersion      int64    `json:"subVersion"`
		ExpressionType  string   `json:"expressionType"`
	}
	body, err := json.Marshal(map[string]any{
		"clientID":        c.clientID,
		"producerDataSet": []any{},
		"consumerDataSet": []any{map[string]any{
			"groupName": c.group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
			"consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": false,
			"subscriptionDataSet": []sub{{Topic: c.cfg.Topic, SubString: "*", TagsSet: []string{}, CodeSet: []string{},
				SubVersion: time.Now().UnixNano(), ExpressionType: "TAG"}},
		}},
	})
	if err != nil {
		return err
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := c.cli.Invoke(hctx, addr, remoting.NewRequest(remoting.HeartBeat, nil, body))
	if err != nil {
		return err
	}
	if resp.Code != remoting.Success {
		return fmt.Errorf("heartbeat to %s: code %d %s", addr, resp.Code, resp.Remark)
	}
	return nil
}

func (c *rawConsumer) start(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	c.cancel = cancel
	seen := map[string]bool{}
	for _, q := range c.queues {
		addr, err := c.target(q)
		if err != nil {
			return err
		}
		if !seen[addr] {
			if err := c.heartbeat(ctx, addr); err != nil {
				return err
			}
			seen[addr] = true
		}
	}
	c.wg.Add(1)
	go func() { // keep the registration alive
		defer c.wg.Done()
		t := time.NewTicker(20 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for addr := range seen {
					_ = c.heartbeat(ctx, addr)
				}
			}
		}
	}()
	for k := range c.queues {
		addr, _ := c.target(c.queues[k])
		c.wg.Add(1)
		go c.pullLoop(ctx, addr, c.queues[k], c.offsets[k])
	}
	return nil
}

func (c *rawConsumer) pullLoop(ctx context.Context, addr string, q queueRef, off int64) {
	defer c.wg.Done()
	for ctx.Err() == nil {
		ext := map[string]string{
			"consumerGroup": c.group, "topic": c.cfg.Topic, "queueId": strconv.Itoa(q.queueID),
			"queueOffset": strconv.FormatInt(off, 10), "maxMsgNums": "32", "sysFlag": "2", "commitOffset": "-1",
			"suspendTimeoutMillis": "1000", "subscription": "", "subVersion": "0", "expressionType": "TAG", "bname": q.brokerName,
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := c.cli.Invoke(pctx, addr, remoting.NewRequest(remoting.PullMessage, ext, nil))
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				c.st.noteErr(fmt.Errorf("pull %s/%d from %s: %w", c.cfg.Topic, q.queueID, addr, err))
				sleepCtx(ctx, 200*time.Millisecond)
			}
			continue
		}
		next, nerr := resp.ExtInt64("nextBeginOffset")
		switch resp.Code {
		case remoting.Success:
			for _, m := range primitive.DecodeMessage(resp.Body) {
				c.st.received(m.Body, c.all)
			}
		case remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved:
		default:
			c.st.noteErr(fmt.Errorf("pull %s/%d from %s: code %d %s", c.cfg.Topic, q.queueID, addr, resp.Code, resp.Remark))
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		if nerr == nil {
			off = next
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *rawConsumer) close() {
	if c.cancel != nil {
		c.cancel()
	}
	c.wg.Wait()
	_ = c.cli.Close()
}
