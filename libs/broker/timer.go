package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rmqha/rmqha/libs/broker/timer"
	"github.com/rmqha/rmqha/libs/commitlog"
	"github.com/rmqha/rmqha/libs/commitlog/vfs"
	"github.com/rmqha/rmqha/libs/remoting"
)

// newTimerService builds the timer service on the store's file system (storePathRootDir/timer).
// It runs on every role from Open to Close; only a writable master delivers.
func (b *Broker) newTimerService(fsys vfs.FS) (*timer.Service, error) {
	tc := timer.DefaultConfig()
	tc.Dir = filepath.Join(b.cfg.StorePathRootDir, "timer")
	tc.FS = fsys
	tc.Enabled = b.cfg.TimerWheelEnable
	tc.PrecisionMs = int64(b.cfg.TimerPrecisionMs)
	tc.MaxDelay = time.Duration(b.cfg.TimerMaxDelaySec) * time.Second
	tc.FlushInterval = time.Duration(b.cfg.TimerFlushIntervalMs) * time.Millisecond
	tc.Logger = b.log.WithField("component", "timer")
	tc.Now = b.now
	s, err := timer.New(tc, b.store, storePutter{b.store})
	if err != nil {
		return nil, fmt.Errorf("timer service: %w", err)
	}
	return s, nil
}

// timerSend applies the timer rules to a single send (RocketMQ's handleScheduleMessage, timer
// part) before the delay-level rules; false when it answered the request (refused).
func (b *Broker) timerSend(w remoting.ResponseWriter, req *remoting.Command, msg *commitlog.Message, sysFlag int32) bool {
	if tt := sysFlag & sysFlagTransactionMask; tt != 0 && tt != sysFlagTransactionCommit {
		return true
	}
	props := commitlog.ParseProperties(msg.Properties)
	_, err := b.timerRules.Transform(msg, props, b.now().UnixMilli())
	switch {
	case err == nil:
		return true
	case errors.Is(err, timer.ErrNotEnabled):
		b.reply(w, req, remoting.SystemError, fmt.Sprintf("accurate timer message is not enabled, timerWheelEnable is %t", b.cfg.TimerWheelEnable))
	default:
		b.reply(w, req, remoting.MessageIllegal, fmt.Sprintf("timer message illegal, the delay time should not be bigger than the max delay %dms; or if set del msg, the delay time should be bigger than the current time", int64(b.cfg.TimerMaxDelaySec)*1000))
	}
	return false
}

// timerRuntimeInfo adds RocketMQ 5's timer keys of GET_BROKER_RUNTIME_INFO (timerReadBehind:
// seconds the delivery cursor is behind the clock on a delivering master; timerOffsetBehind:
// timer records not yet indexed) and this broker's own (timerPending, timerDelivered,
// timerSkipped, timerCancelled, timerDeleteMarkers, timerLatenessHistogram: counts per timer.LatenessBounds bucket).
func (b *Broker) timerRuntimeInfo(t map[string]string, ts *timer.Stats) {
	if ts == nil {
		return
	}
	behind := int64(0)
	if ts.Delivering && ts.Cursor > 0 {
		behind = max(b.now().UnixMilli()-ts.Cursor, 0) / 1000
	}
	t["timerReadBehind"] = strconv.FormatInt(behind, 10)
	t["timerOffsetBehind"] = strconv.FormatInt(max(b.store.QueueMaxOffset(timer.Topic, 0)-ts.Enqueue, 0), 10)
	t["timerPending"] = strconv.FormatInt(ts.Pending, 10)
	t["timerDelivered"] = strconv.FormatInt(ts.Delivered, 10)
	t["timerSkipped"] = strconv.FormatInt(ts.Skipped, 10)
	t["timerCancelled"] = strconv.FormatInt(ts.Cancelled, 10)
	t["timerDeleteMarkers"] = strconv.FormatInt(ts.Markers, 10)
	if js, err := json.Marshal(map[string]any{"boundsMs": timer.LatenessBounds, "counts": ts.Lateness}); err == nil {
		t["timerLatenessHistogram"] = string(js)
	}
}
