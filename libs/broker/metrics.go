package broker

import (
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/obs"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/rmqha/rmqha/libs/route"
	"github.com/sirupsen/logrus"
)

// Metrics served on /metrics, all prefixed rmqha_broker_. Two kinds:
//
//   - per-request instrumentation (sends and pulls by status with latencies, flush and
//     replication waits, fsync times, long-poll holds and wake-ups): counters and histograms
//     resolved once at start, so a request costs a clock read and a few atomic adds. It is on
//     when metricsEnable is (the default) and absent otherwise, so the overhead can be measured.
//   - state (offsets, replication lag per slave, in-sync count, HA counters, metadata versions,
//     held pulls): read from Status-like snapshots when /metrics is scraped, never on a request.
const metricsPrefix = "rmqha_broker_"

// latencyBuckets span a loopback round trip (tens of µs) to a timed-out replication wait (s).
var latencyBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

// sendStatusCodes are the response codes a send is counted under by name; anything else is
// counted as OTHER. SUCCESS is reported as SEND_OK, the producer's name for it.
var sendStatusCodes = []int32{
	remoting.Success, remoting.FlushDiskTimeout, remoting.FlushSlaveTimeout, remoting.SlaveNotAvailable,
	remoting.ServiceNotAvailable, remoting.SystemError, remoting.SystemBusy, remoting.MessageIllegal,
	remoting.NoPermission, remoting.TopicNotExist, remoting.SubscriptionGroupNotExist,
}

// pullStatusCodes are the response codes a pull is counted under by name (SUCCESS as FOUND,
// PULL_NOT_FOUND as NO_NEW_MSG, the consumer's names); anything else is OTHER.
var pullStatusCodes = []int32{
	remoting.Success, remoting.PullNotFound, remoting.PullRetryImmediately, remoting.PullOffsetMoved,
	remoting.SystemError, remoting.SystemBusy, remoting.NoPermission, remoting.TopicNotExist,
	remoting.SubscriptionGroupNotExist, remoting.SubscriptionNotExist, remoting.SubscriptionParseFailed,
	remoting.FilterDataNotExist,
}

// maxCode bounds the code-indexed lookup tables (every named code is below it; the last slot
// takes the codes out of range).
const maxCode = 64

type requestObs struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

// brokerMetrics holds the broker's registry and its pre-resolved instruments.
type brokerMetrics struct {
	reg *prometheus.Registry
	on  bool
	now func() time.Time

	// Series per status are created on first use (so /metrics lists only statuses that
	// happened) and kept in code-indexed tables, so later requests skip the label lookup.
	sendTotal *prometheus.CounterVec
	sendLat   *prometheus.HistogramVec
	send      [maxCode]atomic.Pointer[requestObs]
	pullTotal *prometheus.CounterVec
	pull      [maxCode]atomic.Pointer[prometheus.Counter]

	pullLatency [2]prometheus.Observer // [0] answered at once, [1] after a long-poll hold

	holds       prometheus.Counter
	wakeMessage prometheus.Counter
	wakeTimeout prometheus.Counter

	flushWait prometheus.Observer
	replWait  prometheus.Observer
	acks      [3]prometheus.Counter // by hawire.ReplStatus order: ok, timeout, slave not available
	fsync     prometheus.Observer

	// adminRefused counts admin writes refused with ACL off (adminguard.go), by request;
	// always registered.
	adminRefused *prometheus.CounterVec
}

func sendStatusName(code int32) string {
	if code == remoting.Success {
		return "SEND_OK"
	}
	return remoting.ResponseName(code)
}

func pullStatusName(code int32) string {
	switch code {
	case remoting.Success:
		return "FOUND"
	case remoting.PullNotFound:
		return "NO_NEW_MSG"
	}
	return remoting.ResponseName(code)
}

// newBrokerMetrics builds the registry (Go runtime and process collectors included), the
// scrape-time collector reading b, and, when on, the per-request instruments.
func newBrokerMetrics(b *Broker, on bool) *brokerMetrics {
	m := &brokerMetrics{reg: obs.NewRegistry(), on: on, now: b.now}
	m.reg.MustRegister(&stateCollector{b: b})
	m.reg.MustRegister(&selectorCollector{b: b})
	m.reg.MustRegister(&replyCollector{b: b})
	m.reg.MustRegister(&txnCollector{b: b})
	m.adminRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "admin_refused_total",
		Help: "Admin writes refused with aclEnable=false because they were not signed with the registration secret, by request.",
	}, []string{"request"})
	m.reg.MustRegister(m.adminRefused)
	if !on {
		return m
	}
	sendTotal := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "send_total",
		Help: "Send requests answered, by status (SEND_OK, FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE, refusals and errors by response code).",
	}, []string{"status"})
	sendLat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    metricsPrefix + "send_latency_seconds",
		Help:    "Time from a send's arrival to its answer, by status.",
		Buckets: latencyBuckets,
	}, []string{"status"})
	m.sendTotal, m.sendLat = sendTotal, sendLat

	pullTotal := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "pull_total",
		Help: "Pull requests answered, by result (FOUND, NO_NEW_MSG, PULL_RETRY_IMMEDIATELY, PULL_OFFSET_MOVED, errors by response code).",
	}, []string{"status"})
	m.pullTotal = pullTotal
	pullLat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    metricsPrefix + "pull_latency_seconds",
		Help:    "Time from a pull's arrival to its answer; held=true for pulls parked by long polling.",
		Buckets: latencyBuckets,
	}, []string{"held"})
	m.pullLatency[0], m.pullLatency[1] = pullLat.WithLabelValues("false"), pullLat.WithLabelValues("true")

	m.holds = prometheus.NewCounter(prometheus.CounterOpts{
		Name: metricsPrefix + "long_poll_holds_total",
		Help: "Pulls parked by long polling because nothing was there yet.",
	})
	wake := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "long_poll_wakeups_total",
		Help: "Held pulls released, by reason: message (the queue grew) or timeout (hold time ran out).",
	}, []string{"reason"})
	m.wakeMessage, m.wakeTimeout = wake.WithLabelValues("message"), wake.WithLabelValues("timeout")

	flushWait := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    metricsPrefix + "send_flush_wait_seconds",
		Help:    "SYNC_FLUSH sends: time from arrival until the message was on disk (or the wait failed).",
		Buckets: latencyBuckets,
	})
	replWait := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    metricsPrefix + "send_replication_wait_seconds",
		Help:    "SYNC_MASTER sends: time from arrival until enough slaves acknowledged (or the wait ended).",
		Buckets: latencyBuckets,
	})
	m.flushWait, m.replWait = flushWait, replWait
	acks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsPrefix + "ha_acks_total",
		Help: "SYNC_MASTER replication waits by result: ok (acknowledged by enough slaves), timeout, slave_not_available.",
	}, []string{"result"})
	m.acks[0], m.acks[1], m.acks[2] = acks.WithLabelValues("ok"), acks.WithLabelValues("timeout"), acks.WithLabelValues("slave_not_available")
	fsync := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    metricsPrefix + "store_fsync_seconds",
		Help:    "Duration of each fsync of a store file (CommitLog and consume queues).",
		Buckets: latencyBuckets,
	})
	m.fsync = fsync
	m.reg.MustRegister(sendTotal, sendLat, pullTotal, pullLat, m.holds, wake, flushWait, replWait, acks, fsync)
	return m
}

// registerRemoting adds the remoting port's connection, TLS and byte-budget series
// (rmqha_broker_remoting_*, see obs.RemotingCollector) and the name-server client's TLS
// handshakes.
func (m *brokerMetrics) registerRemoting(srv *remoting.Server, cli *remoting.Client) {
	m.reg.MustRegister(obs.RemotingCollector(metricsPrefix+"remoting_", srv.Stats))
	for result, v := range map[string]func(remoting.ClientStats) int64{
		"ok":     func(s remoting.ClientStats) int64 { return s.HandshakesOK },
		"failed": func(s remoting.ClientStats) int64 { return s.HandshakesFailed },
	} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        metricsPrefix + "namesrv_client_tls_handshakes_total",
			Help:        "TLS handshakes of the broker's client to the name servers (tls.enable), by result.",
			ConstLabels: prometheus.Labels{"result": result},
		}, func() float64 { return float64(v(cli.Stats())) }))
	}
}

// statusSlot is a response code's slot in the code-indexed tables (the last one for codes out
// of range), and statusLabel its label: its name when it is one of named, else OTHER.
func statusSlot(code int32) int {
	if code >= 0 && code < maxCode-1 {
		return int(code)
	}
	return maxCode - 1
}

func statusLabel(code int32, named []int32, name func(int32) string) string {
	for _, c := range named {
		if c == code {
			return name(code)
		}
	}
	return "OTHER"
}

func (m *brokerMetrics) sendObs(code int32) *requestObs {
	i := statusSlot(code)
	if o := m.send[i].Load(); o != nil {
		return o
	}
	n := statusLabel(code, sendStatusCodes, sendStatusName)
	m.send[i].CompareAndSwap(nil, &requestObs{count: m.sendTotal.WithLabelValues(n), latency: m.sendLat.WithLabelValues(n)})
	return m.send[i].Load()
}

func (m *brokerMetrics) pullCounter(code int32) prometheus.Counter {
	i := statusSlot(code)
	if c := m.pull[i].Load(); c != nil {
		return *c
	}
	c := m.pullTotal.WithLabelValues(statusLabel(code, pullStatusCodes, pullStatusName))
	m.pull[i].CompareAndSwap(nil, &c)
	return *m.pull[i].Load()
}

// sendWriter counts a send's answer under its status and observes arrival → answer.
type sendWriter struct {
	remoting.ResponseWriter
	m       *brokerMetrics
	arrival time.Time
	done    atomic.Bool
}

// Write counts before it writes: a client that has its answer finds it counted.
func (w *sendWriter) Write(resp *remoting.Command) error {
	w.count(resp)
	return w.ResponseWriter.Write(resp)
}

// WriteNoWait is Write without waiting for a congested connection (remoting.NoWaitWriter). It
// counts before it writes too, as the answer may reach the client before the write returns
// (remoting writes a connection's only answer directly). An answer a congested connection does
// not take now is counted here, once: the send pipeline writes the same answer later.
func (w *sendWriter) WriteNoWait(resp *remoting.Command) (bool, error) {
	nw, ok := w.ResponseWriter.(remoting.NoWaitWriter)
	if !ok {
		return true, w.Write(resp)
	}
	w.count(resp)
	return nw.WriteNoWait(resp)
}

// count counts the send's answer and its latency, once.
func (w *sendWriter) count(resp *remoting.Command) {
	if w.done.CompareAndSwap(false, true) {
		o := w.m.sendObs(resp.Code)
		o.count.Inc()
		o.latency.Observe(w.m.now().Sub(w.arrival).Seconds())
	}
}

// instrumentSend wraps a send's writer (when instrumentation is on).
func (m *brokerMetrics) instrumentSend(w remoting.ResponseWriter) remoting.ResponseWriter {
	if !m.on {
		return w
	}
	return m.instrumentSendIn(&sendWriter{}, w, m.now())
}

// instrumentSendIn is instrumentSend into sw, a zero sendWriter the caller allocated with
// something else (a send's answer), for a send that arrived at arrival.
func (m *brokerMetrics) instrumentSendIn(sw *sendWriter, w remoting.ResponseWriter, arrival time.Time) remoting.ResponseWriter {
	if !m.on {
		return w
	}
	sw.ResponseWriter, sw.m, sw.arrival = w, m, arrival
	return sw
}

// pullWriter counts a pull's answer under its result and observes arrival → answer, apart for
// pulls that were held.
type pullWriter struct {
	remoting.ResponseWriter
	m       *brokerMetrics
	arrival time.Time
	held    atomic.Bool
	done    atomic.Bool
}

// Write counts before it writes, as sendWriter does.
func (w *pullWriter) Write(resp *remoting.Command) error {
	if w.done.CompareAndSwap(false, true) {
		w.m.pullCounter(resp.Code).Inc()
		i := 0
		if w.held.Load() {
			i = 1
		}
		w.m.pullLatency[i].Observe(w.m.now().Sub(w.arrival).Seconds())
	}
	return w.ResponseWriter.Write(resp)
}

// instrumentPull wraps a pull's writer (when instrumentation is on).
func (m *brokerMetrics) instrumentPull(w remoting.ResponseWriter) remoting.ResponseWriter {
	if !m.on {
		return w
	}
	return &pullWriter{ResponseWriter: w, m: m, arrival: m.now()}
}

// pullHeld records that long polling parked the pull answered through w.
func (m *brokerMetrics) pullHeld(w remoting.ResponseWriter) {
	if !m.on {
		return
	}
	m.holds.Inc()
	if pw, ok := w.(*pullWriter); ok {
		pw.held.Store(true)
	}
}

// pullsWoken records held pulls released because their queue grew (timeout=false) or their hold
// time ran out (timeout=true).
func (m *brokerMetrics) pullsWoken(n int, timeout bool) {
	if !m.on || n == 0 {
		return
	}
	if timeout {
		m.wakeTimeout.Add(float64(n))
	} else {
		m.wakeMessage.Add(float64(n))
	}
}

// flushWaited records a SYNC_FLUSH send's wait for the disk, measured from arrival.
func (m *brokerMetrics) flushWaited(arrival time.Time) {
	if m.on {
		m.flushWait.Observe(m.now().Sub(arrival).Seconds())
	}
}

// replWaited records a SYNC_MASTER send's wait for the slaves, measured from arrival, and its
// result.
func (m *brokerMetrics) replWaited(arrival time.Time, repl hawire.ReplStatus) {
	if !m.on {
		return
	}
	m.replWait.Observe(m.now().Sub(arrival).Seconds())
	switch repl {
	case hawire.ReplOK:
		m.acks[0].Inc()
	case hawire.ReplSlaveNotAvailable:
		m.acks[2].Inc()
	default:
		m.acks[1].Inc()
	}
}

// storeFS wraps the store's file system so that every fsync is timed (when instrumentation is
// on); fsyncs run on the flush goroutine, never per message.
func (m *brokerMetrics) storeFS(fs vfs.FS) vfs.FS {
	if !m.on {
		return fs
	}
	if fs == nil {
		fs = vfs.Default
	}
	return timedFS{FS: fs, m: m}
}

type timedFS struct {
	vfs.FS
	m *brokerMetrics
}

func (f timedFS) Create(name string) (vfs.File, error) {
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return timedFile{File: file, m: f.m}, nil
}

func (f timedFS) Open(name string) (vfs.File, error) {
	file, err := f.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return timedFile{File: file, m: f.m}, nil
}

type timedFile struct {
	vfs.File
	m *brokerMetrics
}

var _ vfs.TailWriter = timedFile{}

// WriteAtTail keeps the wrapped file's raw append (vfs.TailWriter).
func (f timedFile) WriteAtTail(p []byte, off int64) (int, error) {
	return vfs.WriteAtTail(f.File, p, off)
}

func (f timedFile) Sync() error {
	start := time.Now()
	err := f.File.Sync()
	f.m.fsync.Observe(time.Since(start).Seconds())
	return err
}

// MetricsRegistry is the registry served on /metrics: Go runtime and process metrics, the
// broker's state read at scrape time and, with metricsEnable, the per-request instruments.
func (b *Broker) MetricsRegistry() *prometheus.Registry { return b.metrics.reg }

// stateCollector reads the broker's state when /metrics is scraped.
type stateCollector struct{ b *Broker }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(metricsPrefix+name, help, labels, nil)
}

var (
	descInfo       = desc("info", "Broker identity (value 1).", "cluster", "broker", "broker_id", "role")
	descRunning    = desc("running", "1 while the broker is running.")
	descFenced     = desc("writes_fenced", "1 while writes are refused: a role switch, or a master whose failover lease may have ended.")
	descSwitches   = desc("role_switches_total", "Completed promotions and demotions (automatic failover, switchover).")
	descMinOffset  = desc("store_min_offset", "Smallest CommitLog offset still stored.")
	descMaxOffset  = desc("store_max_offset", "CommitLog end offset (bytes ever appended, retention included).")
	descFlushed    = desc("store_flushed_offset", "CommitLog offset known to be on disk.")
	descDispatched = desc("store_dispatched_offset", "CommitLog offset indexed into consume queues.")
	descReadOnly   = desc("store_read_only", "1 when the store refuses writes after a disk error.")
	descSegments   = desc("store_segments", "CommitLog segment files.")
	descAppended   = desc("store_appended_bytes_total", "Bytes appended to the CommitLog (sends and replication).")
	descAppends    = desc("store_appended_messages_total", "Records appended by sends (replicated bytes are not counted as records).")
	descFsyncs     = desc("store_fsyncs_total", "CommitLog fsync rounds.")
	descFlushTO    = desc("store_flush_timeouts_total", "SYNC_FLUSH waits that hit syncFlushTimeout.")
	descSendReq    = desc("send_requests_total", "Send requests received.")
	descRefused    = desc("send_refused_total", "Sends refused before storing (slave, stopping, read-only store, minInSyncReplicas).")
	descPullReq    = desc("pull_requests_total", "Pull requests received.")
	descHeld       = desc("long_poll_held", "Pulls currently held by long polling.")
	descMetaVer    = desc("metadata_version", "Counter part of a metadata table's DataVersion.", "table")
	descMetaLen    = desc("metadata_entries", "Entries of a metadata table.", "table")
	descClients    = desc("client_channels", "Client connections known from heartbeats, by kind.", "kind")

	descAutoCreated  = desc("autocreate_total", "Subscription groups, retry topics and topics auto-created by client requests, by kind (group, retry_topic, topic).", "kind")
	descAutoRefused  = desc("autocreate_refused_total", "Auto-creations refused, by bound (table_limit, per_heartbeat, per_connection, disabled, invalid_name; topic_limit for sends).", "reason")
	descHBRefused    = desc("heartbeat_refused_total", "Heartbeats refused whole, by reason (invalid_name, too_large, connection_registrations).", "reason")
	descMetaWrites   = desc("metadata_writes_total", "Rewrites of a metadata table file.", "table")
	descMetaPending  = desc("metadata_pending_changes", "Changes of a metadata table not yet in its file (written with the next batch).", "table")
	descCQRepairs    = desc("store_cq_repaired_queues", "Consume queues found incomplete at the last start and rebuilt from the CommitLog.")
	descCQRestored   = desc("store_cq_restored_units", "Consume-queue entries the start-up check rebuilt from the CommitLog.")
	descLogCut       = desc("store_recovery_cut_bytes", "CommitLog bytes the last start cut at its first invalid record (0: nothing cut; where and why on /status storeCheck.cut).")
	descSysTopicSend = desc("system_topic_send_refused_total", "Client sends to a topic only the broker may store into (SCHEDULE_TOPIC_XXXX, RMQ_SYS_TRANS_HALF_TOPIC, ...), answered NO_PERMISSION.")
	descLocks        = desc("queue_locks", "Queue locks held for orderly consumers (LOCK_BATCH_MQ), expired ones included until swept.")
	descLockRefused  = desc("queue_lock_refused_total", "LOCK_BATCH_MQ requests answered SYSTEM_BUSY, by bound (group_limit: lockMaxQueuesPerGroup, table_limit: lockMaxQueues).", "reason")
	descStatsKeys    = desc("stats_keys", "Keys of the broker stats (VIEW_BROKER_STATS_DATA) by family: topic (TOPIC_PUT_*), group (GROUP_GET_*, topic@group), sendback (SNDBCK_PUT_NUMS).", "family")
	descStatsRefused = desc("stats_keys_refused_total", "New stats keys not counted because their family held statsMaxKeys.")
	descDelayRefused = desc("delay_refused_total", "Scheduled records delivered nowhere: REAL_TOPIC missing or the schedule topic itself.")
	descTimerPending = desc("timer_pending", "Timer messages (rmq_sys_wheel_timer) not yet delivered: indexed ones plus the queue not yet indexed.")
	descTimerDeliv   = desc("timer_delivered_total", "Timer messages delivered into their real topics since start.")
	descTimerSkipped = desc("timer_skipped_total", "Timer index entries or records that could not be delivered (logged).")
	descTimerCancel  = desc("timer_cancelled_total", "Timer messages not delivered because a delete marker (TIMER_DEL_UNIQKEY) of their slot named them, since start.")
	descTimerMarkers = desc("timer_delete_markers_total", "Timer delete markers (TIMER_DEL_UNIQKEY) whose slot was reached since start (never delivered themselves).")
	descTimerLate    = desc("timer_lateness_seconds", "How long after its due time (the end of its slot) each timer message was delivered.")

	descEpoch        = desc("ha_epoch", "Master: current epoch; slave: last epoch of its log.")
	descConfirmed    = desc("ha_confirmed_offset", "Offset acknowledged by enough copies (master), or the master's confirmed offset as last told (slave).")
	descInSync       = desc("ha_in_sync_replicas", "Master: copies in sync, the master included.")
	descInSyncSlaves = desc("ha_in_sync_slaves", "Master: slaves in sync.")
	descNeeded       = desc("ha_required_replicas", "Master: inSyncReplicas, the copies a SYNC_MASTER send waits for.")
	descSlavesConn   = desc("ha_connected_slaves", "Master: slave connections past the handshake.")
	descWaiters      = desc("ha_pending_waiters", "Master: sends waiting for replication.")
	descSlaveLag     = desc("ha_slave_lag_bytes", "Master: bytes appended but not acknowledged by this slave.", "slave_addr", "slave_id")
	descSlaveLagSec  = desc("ha_slave_lag_seconds", "Master: how long this slave's acknowledgement has trailed the log end.", "slave_addr", "slave_id")
	descSlaveInSync  = desc("ha_slave_in_sync", "Master: 1 when this slave counts as in sync.", "slave_addr", "slave_id")
	descSlaveAck     = desc("ha_slave_ack_offset", "Master: offset this slave acknowledged as written (its rate is the acknowledged byte rate).", "slave_addr", "slave_id")
	descSlaveAckAge  = desc("ha_slave_last_ack_age_seconds", "Master: time since this slave's last acknowledgement.", "slave_addr", "slave_id")
	descHACounter    = desc("ha_errors_total", "Master: rejected or dropped HA peers by kind (ack_violation, auth_failure, handshake_error, protocol_error, expired).", "kind")

	descReplConnected = desc("ha_replication_connected", "Slave: 1 while streaming from its master.", "master_addr")
	descReplFailed    = desc("ha_replication_failed", "Slave: 1 when replication stopped on an unrecoverable error.")
	descReplLag       = desc("ha_replication_lag_bytes", "Slave: bytes the master reported beyond the local log end.")
	descReplLagSec    = desc("ha_replication_lag_seconds", "Slave: time since the slave last held everything the master had reported.")
	descMasterMax     = desc("ha_master_max_offset", "Slave: the master's log end as last reported.")
	descReconnects    = desc("ha_reconnects_total", "Slave: connections to the master after the first.")
	descHARefused     = desc("ha_refused_masters_total", "Slave: master verdicts refused, by reason (unproven: no valid master proof; stale_epoch: master epoch below the slave's; wipe_refused: a wipe without haAllowWipe; bad_verdict: contradicts the slave's log; version: no shared protocol version).", "reason")
)

var allDescs = []*prometheus.Desc{
	descInfo, descRunning, descFenced, descSwitches, descMinOffset, descMaxOffset, descFlushed, descDispatched, descReadOnly,
	descSegments, descAppended, descAppends, descFsyncs, descFlushTO, descSendReq, descRefused,
	descPullReq, descHeld, descMetaVer, descMetaLen, descClients, descEpoch, descConfirmed,
	descAutoCreated, descAutoRefused, descHBRefused, descMetaWrites, descMetaPending, descCQRepairs, descCQRestored, descLogCut, descDelayRefused, descSysTopicSend,
	descLocks, descLockRefused, descStatsKeys, descStatsRefused,
	descTimerPending, descTimerDeliv, descTimerSkipped, descTimerCancel, descTimerMarkers, descTimerLate,
	descInSync, descInSyncSlaves, descNeeded, descSlavesConn, descWaiters, descSlaveLag,
	descSlaveLagSec, descSlaveInSync, descSlaveAck, descSlaveAckAge, descHACounter,
	descReplConnected, descReplFailed, descReplLag, descReplLagSec, descMasterMax, descReconnects, descHARefused,
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

func boolGauge(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	cfg, v := b.cfg, b.view()
	// The current role and brokerId: a promoted slave reports itself as the master it is.
	gauge(descInfo, 1, cfg.BrokerClusterName, cfg.BrokerName, strconv.FormatInt(v.id, 10), v.role)
	gauge(descRunning, boolGauge(b.running()))
	gauge(descFenced, boolGauge(b.role.fenced.Load()))
	counter(descSwitches, float64(b.role.switches.Load()))
	counter(descSendReq, float64(b.sends.Load()))
	counter(descRefused, float64(b.sendRejects.Load()))
	counter(descPullReq, float64(b.pulls.Load()))
	counter(descSysTopicSend, float64(b.systemTopicSends.Load()))
	if !b.running() {
		// The store, tables and replication may be closing; report only what is safe.
		return
	}
	if b.store != nil {
		s := b.store.Stats()
		gauge(descMinOffset, float64(s.MinOffset))
		gauge(descMaxOffset, float64(s.MaxOffset))
		gauge(descFlushed, float64(s.FlushedOffset))
		gauge(descDispatched, float64(s.DispatchedOffset))
		gauge(descReadOnly, boolGauge(s.ReadOnly))
		gauge(descSegments, float64(s.Segments))
		counter(descAppended, float64(s.AppendedBytes))
		counter(descAppends, float64(s.Appends))
		counter(descFsyncs, float64(s.Fsyncs))
		counter(descFlushTO, float64(s.FlushTimeouts))
		rep := b.store.Recovery()
		gauge(descCQRepairs, float64(len(rep.CQRepairs)))
		gauge(descCQRestored, float64(rep.CQRestored))
		gauge(descLogCut, float64(max(rep.CutBytes, 0)))
	}
	if b.holds != nil {
		gauge(descHeld, float64(b.holds.heldCount()))
	}
	if b.tables != nil {
		tv, gv := b.tables.Topics.DataVersion(), b.tables.Groups.DataVersion()
		counter(descMetaVer, float64(tv.Counter), "topics")
		counter(descMetaVer, float64(gv.Counter), "subscriptionGroups")
		gauge(descMetaLen, float64(b.tables.Topics.Len()), "topics")
		gauge(descMetaLen, float64(b.tables.Groups.Len()), "subscriptionGroups")
		if b.tables.Delay != nil {
			// At most one entry per delay level: decoding its snapshot is cheap.
			var d struct {
				DataVersion route.DataVersion `json:"dataVersion"`
			}
			if json.Unmarshal(b.tables.Delay.Snapshot(), &d) == nil {
				counter(descMetaVer, float64(d.DataVersion.Counter), "delayOffset")
			}
		}
	}
	if b.autoc != nil {
		counter(descAutoCreated, float64(b.autoc.createdGroups.Load()), "group")
		counter(descAutoCreated, float64(b.autoc.createdRetry.Load()), "retry_topic")
		counter(descAutoCreated, float64(b.autoc.createdTopics.Load()), "topic")
		for _, r := range refusedReasons {
			counter(descAutoRefused, float64(b.autoc.refused[r].Load()), r)
		}
		for _, r := range heartbeatRefusedReasons {
			counter(descHBRefused, float64(b.autoc.hbRefused[r].Load()), r)
		}
	}
	if b.bstats != nil {
		topics, groups, sendBacks, refused := b.bstats.Keys()
		gauge(descStatsKeys, float64(topics), "topic")
		gauge(descStatsKeys, float64(groups), "group")
		gauge(descStatsKeys, float64(sendBacks), "sendback")
		counter(descStatsRefused, float64(refused))
	}
	if b.locks != nil {
		gauge(descLocks, float64(b.locks.size()))
		for _, r := range lockRefusedReasons {
			counter(descLockRefused, float64(b.locks.refused[r].Load()), r)
		}
	}
	if b.tables != nil {
		counter(descMetaWrites, float64(b.tables.Topics.Writes()), "topics")
		counter(descMetaWrites, float64(b.tables.Groups.Writes()), "subscriptionGroups")
		gauge(descMetaPending, float64(b.tables.Topics.Pending()), "topics")
		gauge(descMetaPending, float64(b.tables.Groups.Pending()), "subscriptionGroups")
	}
	if b.clients != nil {
		cons, prods := b.clients.counts()
		gauge(descClients, float64(cons), "consumer")
		gauge(descClients, float64(prods), "producer")
	}
	if v.delay != nil {
		var refused int64
		for _, ls := range v.delay.Stats() {
			refused += ls.Refused
		}
		counter(descDelayRefused, float64(refused))
	}
	if b.timers != nil {
		ts := b.timers.Stats()
		gauge(descTimerPending, float64(ts.Pending))
		counter(descTimerDeliv, float64(ts.Delivered))
		counter(descTimerSkipped, float64(ts.Skipped))
		counter(descTimerCancel, float64(ts.Cancelled))
		counter(descTimerMarkers, float64(ts.Markers))
		buckets := make(map[float64]uint64, len(timer.LatenessBounds))
		var cum uint64
		for i, ub := range timer.LatenessBounds {
			cum += uint64(ts.Lateness[i])
			buckets[float64(ub)/1000] = cum
		}
		cum += uint64(ts.Lateness[len(timer.LatenessBounds)])
		ch <- prometheus.MustNewConstHistogram(descTimerLate, cum, float64(ts.LatenessSumMs)/1000, buckets)
	}
	if v.master != nil {
		ms := v.master.Status()
		now := b.now()
		gauge(descEpoch, float64(ms.Epoch))
		gauge(descConfirmed, float64(ms.Confirmed))
		gauge(descInSync, float64(ms.InSyncCount))
		gauge(descInSyncSlaves, float64(max(0, ms.InSyncCount-1)))
		gauge(descNeeded, float64(ms.InSyncReplicas))
		gauge(descWaiters, float64(ms.PendingWaiters))
		streaming := 0
		for _, si := range ms.Slaves {
			if !si.Streaming {
				continue
			}
			streaming++
			id := strconv.FormatInt(si.BrokerID, 10)
			gauge(descSlaveLag, float64(si.LagBytes), si.Addr, id)
			gauge(descSlaveLagSec, si.LagSeconds, si.Addr, id)
			gauge(descSlaveInSync, boolGauge(si.InSync), si.Addr, id)
			gauge(descSlaveAck, float64(si.AckOffset), si.Addr, id)
			if !si.LastAck.IsZero() {
				gauge(descSlaveAckAge, max(0, now.Sub(si.LastAck).Seconds()), si.Addr, id)
			}
		}
		gauge(descSlavesConn, float64(streaming))
		k := ms.Counters
		counter(descHACounter, float64(k.AckViolations), "ack_violation")
		counter(descHACounter, float64(k.AuthFailures), "auth_failure")
		counter(descHACounter, float64(k.HandshakeErrors), "handshake_error")
		counter(descHACounter, float64(k.ProtocolErrors), "protocol_error")
		counter(descHACounter, float64(k.Expired), "expired")
	}
	if v.slave != nil {
		ss := v.slave.Status()
		gauge(descEpoch, float64(ss.LastEpoch))
		gauge(descConfirmed, float64(ss.Confirmed))
		gauge(descReplConnected, boolGauge(ss.Connected), ss.MasterAddr)
		gauge(descReplFailed, boolGauge(ss.State == hawire.SlaveFailed.String()))
		gauge(descReplLag, float64(ss.LagBytes))
		gauge(descReplLagSec, ss.LagSeconds)
		gauge(descMasterMax, float64(ss.MasterMaxOffset))
		counter(descReconnects, float64(ss.Reconnects))
		k := ss.Counters
		counter(descHARefused, float64(k.UnprovenMasters), "unproven")
		counter(descHARefused, float64(k.StaleMasters), "stale_epoch")
		counter(descHARefused, float64(k.WipesRefused), "wipe_refused")
		counter(descHARefused, float64(k.BadVerdicts), "bad_verdict")
		counter(descHARefused, float64(k.VersionRefusals), "version")
	}
}

// Claim watch: warnings when the configuration cannot deliver what it claims.
const (
	claimWarnAfter  = 10 * time.Second // a shortfall must last this long before the first warning
	claimWarnRepeat = time.Minute      // then it is repeated at most this often while it lasts
	claimCheckEvery = time.Second
)

// claimWatch tracks one condition: since when it holds and when it was last reported.
type claimWatch struct {
	since    time.Time
	lastWarn time.Time
}

// update reports whether to warn now (first after warnAfter, then every repeat), and whether
// a reported shortfall has just ended.
func (c *claimWatch) update(bad bool, now time.Time, warnAfter, repeat time.Duration) (warn, recovered bool) {
	if !bad {
		recovered = !c.lastWarn.IsZero()
		*c = claimWatch{}
		return false, recovered
	}
	if c.since.IsZero() {
		c.since = now
	}
	if now.Sub(c.since) < warnAfter {
		return false, false
	}
	if c.lastWarn.IsZero() || now.Sub(c.lastWarn) >= repeat {
		c.lastWarn = now
		return true, false
	}
	return false, false
}

// claimLoop checks the claims every claimCheckEvery until the broker stops.
func (b *Broker) claimLoop() {
	defer b.wg.Done()
	t := time.NewTicker(b.claimEvery)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			b.checkClaims(b.now())
		}
	}
}

// checkClaims warns when a SYNC_MASTER has had fewer copies in sync than inSyncReplicas for
// longer than claimWarnAfter (its sends are stored on the master only), and when a slave's
// replication has stopped (not streaming, or failed) for that long.
func (b *Broker) checkClaims(now time.Time) {
	v := b.view()
	if v.master != nil && v.role == RoleSyncMaster {
		ms := v.master.Status()
		bad := ms.InSyncCount < b.cfg.InSyncReplicas
		warn, recovered := b.syncClaim.update(bad, now, b.claimAfter, b.claimRepeat)
		f := logrus.Fields{"inSync": ms.InSyncCount, "inSyncReplicas": b.cfg.InSyncReplicas, "offset": ms.MaxOffset, "role": v.role}
		switch {
		case warn:
			peers := make([]string, 0, len(ms.Slaves))
			for _, si := range ms.Slaves {
				peers = append(peers, si.Addr)
			}
			f["for"] = now.Sub(b.syncClaim.since).Round(time.Second).String()
			f["peer"] = peers
			b.log.WithFields(f).Warn("SYNC_MASTER without enough slaves in sync: sends are stored on the master only and answered SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT")
		case recovered:
			b.log.WithFields(f).Info("SYNC_MASTER has enough slaves in sync again")
		}
	}
	if v.slave != nil {
		ss := v.slave.Status()
		failed := ss.State == hawire.SlaveFailed.String()
		warn, recovered := b.replClaim.update(failed || !ss.Connected, now, b.claimAfter, b.claimRepeat)
		peer := ss.MasterAddr
		if peer == "" {
			peer = b.cfg.HAMasterAddress // not dialled yet; "" until registration names the master
		}
		f := logrus.Fields{"peer": peer, "state": ss.State, "offset": ss.LocalMaxOffset, "lagBytes": ss.LagBytes, "role": v.role}
		switch {
		case warn:
			f["for"] = now.Sub(b.replClaim.since).Round(time.Second).String()
			if ss.LastError != "" {
				f["lastError"] = ss.LastError
			}
			b.log.WithFields(f).Warn("slave replication has stopped: this slave no longer receives the master's messages")
		case recovered:
			b.log.WithFields(f).Info("slave replication resumed")
		}
	}
}
