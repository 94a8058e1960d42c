package broker

import (
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/remoting"
)

// storedAnswer is the answer a stored message completes once its flush and replication waits
// are known: a send's typed one, or a reply's map-based response.
type storedAnswer interface {
	command() *remoting.Command
	// pending is where the answer's wait is kept if it has to wait (nil: allocate one).
	pending() *pendingSend
	// setOutcome records the copies confirmed and, when flushKnown, whether the message is on
	// disk.
	setOutcome(replicas int, flushKnown, flushed bool)
}

// mapAnswer is a response whose custom header is its ExtFields map.
type mapAnswer struct{ resp *remoting.Command }

func (a mapAnswer) command() *remoting.Command { return a.resp }

func (a mapAnswer) pending() *pendingSend { return nil }

func (a mapAnswer) setOutcome(replicas int, flushKnown, flushed bool) {
	a.resp.ExtFields["stored"] = "true"
	a.resp.ExtFields["replicas"] = strconv.Itoa(replicas)
	if flushKnown {
		a.resp.ExtFields["flushed"] = strconv.FormatBool(flushed)
	}
}

// sendAnswer is the answer to a send: the response, its custom header, the send's
// instrumented writer and its wait in one element of a slab (newSendAnswer), the header kept
// typed and written into the frame by AppendExt (no map, no number strings). Its bytes are those the map of the same fields encodes to (the keys in
// the sorted order the map encoder writes), TestSendAnswerBytes checks.
type sendAnswer struct {
	resp        remoting.Command
	sw          sendWriter  // the send's instrumented writer, when metrics are on
	wait        pendingSend // the send's flush and replication wait, when it has one
	msgID       string
	queueID     int32
	queueOffset int64
	txID        string // transactionId: the message's UNIQ_KEY, "" for none
	replicas    int
	flushKnown  bool
	flushed     bool

	// What Appended needs to finish the send once the store wrote it (AppendAsync).
	b       *Broker
	view    *roleView
	w       remoting.ResponseWriter
	topic   string
	size    int
	waits   bool // the message waits for flush and replication as configured (not WAIT=false)
	arrival time.Time
	// host and offset, with offID, are where the store wrote the message: AppendExt writes
	// its msgId from them (no string per message).
	host   netip.AddrPort
	offset int64
	offID  bool
}

// answerSlabSize is how many send answers are allocated at once (about 15 KiB).
const answerSlabSize = 32

// answerSlab is the unused rest of a slab of send answers.
type answerSlab struct{ free []sendAnswer }

// answerSlabs holds partly used slabs. Each sender takes the next answer of one, so a busy
// broker makes one allocation per answerSlabSize sends, not one per send. An answer taken is
// never handed out again: it lives as long as its send needs it (a SYNC wait, a congested
// connection's queue), and its slab is freed once none of its answers is held. A slab the pool
// drops is simply left to the collector with its answers.
var answerSlabs sync.Pool

func newSendAnswer(req *remoting.Command) *sendAnswer {
	s, _ := answerSlabs.Get().(*answerSlab)
	if s == nil {
		s = &answerSlab{free: make([]sendAnswer, answerSlabSize)}
	}
	a := &s.free[0]
	if s.free = s.free[1:]; len(s.free) > 0 {
		answerSlabs.Put(s)
	}
	a.resp = remoting.Command{
		Code: remoting.Success, Language: remoting.LanguageGo, Version: remoting.VersionV4_9_8,
		Flag: remoting.FlagResponse, Opaque: req.Opaque, ExtAppend: a,
	}
	return a
}

func (a *sendAnswer) command() *remoting.Command { return &a.resp }

func (a *sendAnswer) pending() *pendingSend { return &a.wait }

func (a *sendAnswer) setOutcome(replicas int, flushKnown, flushed bool) {
	a.replicas, a.flushKnown, a.flushed = replicas, flushKnown, flushed
}

// Appended finishes a send the store wrote (or failed to), on the goroutine that wrote its
// group (commitlog.AppendDone): it must not wait for the client's connection, so the answer is
// queued without waiting and a congested connection gets it from the send pipeline.
func (a *sendAnswer) Appended(res commitlog.AppendResult, err error) {
	b := a.b
	if err != nil {
		code, remark := storeErrorAnswer(err)
		b.answerNoWait(a.w, remoting.NewResponse(nil, code, remark))
		return
	}
	b.countPut(a.topic, 1, a.size)
	a.host, a.offset, a.offID, a.queueOffset = b.store.StoreHost(), res.WroteOffset, true, res.QueueOffset
	b.complete(a.view, a.w, a, res.EndOffset, a.waits, a.arrival, true)
}

// The fields every send answer carries the same, encoded once.
var (
	sendAnswerHead   = mustExtTemplate("MSG_REGION", regionDefault, "TRACE_ON", "true")
	sendAnswerStored = mustExtTemplate("stored", "true")
)

func mustExtTemplate(kv ...string) *remoting.ExtTemplate {
	t, err := remoting.NewExtTemplate(kv...)
	if err != nil {
		panic(err) // fixed fields: a failure is a programming error, found at start
	}
	return t
}

// AppendExt writes SendMessageResponseHeader's fields and this broker's stored, replicas and
// flushed, in byte order of their keys.
func (a *sendAnswer) AppendExt(w remoting.ExtWriter) remoting.ExtWriter {
	w.Template(sendAnswerHead)
	if a.flushKnown {
		w.Bool("flushed", a.flushed)
	}
	if a.msgID == "" && a.offID {
		var buf [56]byte
		w.Bytes("msgId", commitlog.AppendOffsetMsgID(buf[:0], a.host, a.offset))
	} else {
		w.String("msgId", a.msgID)
	}
	w.Int("queueId", int64(a.queueID))
	w.Int("queueOffset", a.queueOffset)
	w.Int("replicas", int64(a.replicas))
	w.Template(sendAnswerStored)
	if a.txID != "" {
		w.String("transactionId", a.txID)
	}
	return w
}

// pullAnswer is a pull's answer: PullMessageResponseHeader's fields kept typed and written by
// AppendExt in the sorted key order the map encoder gives them (TestPullAnswerBytes).
type pullAnswer struct {
	resp                    remoting.Command
	next, min, max, suggest int64
}

func newPullAnswer(req *remoting.Command, code int32, remark string) *pullAnswer {
	a := &pullAnswer{resp: remoting.Command{
		Code: code, Language: remoting.LanguageGo, Version: remoting.VersionV4_9_8,
		Flag: remoting.FlagResponse, Opaque: req.Opaque, Remark: remark,
	}}
	a.resp.ExtAppend = a
	return a
}

func (a *pullAnswer) command() *remoting.Command { return &a.resp }

// AppendExt writes maxOffset, minOffset, nextBeginOffset and suggestWhichBrokerId.
func (a *pullAnswer) AppendExt(w remoting.ExtWriter) remoting.ExtWriter {
	w.Int("maxOffset", a.max)
	w.Int("minOffset", a.min)
	w.Int("nextBeginOffset", a.next)
	w.Int("suggestWhichBrokerId", a.suggest)
	return w
}
