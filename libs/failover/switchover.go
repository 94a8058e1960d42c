package failover

import (
	"context"
	"fmt"
	"time"
)

// SwitchoverResult is what a completed switchover changed.
type SwitchoverResult struct {
	From      int64         `json:"from"`
	To        int64         `json:"to"`
	FromEpoch int64         `json:"fromEpoch"`
	ToEpoch   int64         `json:"toEpoch"`
	Took      time.Duration `json:"took"`
}

// ReadLeader returns the lock holder (nil when the lock is free) and the published state.
func ReadLeader(ctx context.Context, c Coordinator, cluster, brokerName string) (*Leader, *State, error) {
	kv, ok, err := c.Get(ctx, LeaderKey(cluster, brokerName))
	if err != nil {
		return nil, nil, err
	}
	var l *Leader
	if ok && kv.Session != "" {
		if l, err = decode[Leader](kv.Value); err != nil {
			return nil, nil, err
		}
	}
	skv, ok, err := c.Get(ctx, StateKey(cluster, brokerName))
	if err != nil {
		return nil, nil, err
	}
	var st *State
	if ok {
		if st, err = decode[State](skv.Value); err != nil {
			return nil, nil, err
		}
	}
	return l, st, nil
}

// RequestSwitchover asks the group's master to hand over to node to (0: any in-sync slave) and waits,
// polling every poll, until another node holds the lock at a higher epoch as a serving master.
// The master fences writes, waits until the slave holds everything, names it the only eligible
// node and releases the lock; nothing acknowledged is lost.
func RequestSwitchover(ctx context.Context, c Coordinator, cluster, brokerName string, to int64, poll time.Duration, now func() time.Time) (SwitchoverResult, error) {
	var res SwitchoverResult
	l, st, err := ReadLeader(ctx, c, cluster, brokerName)
	if err != nil {
		return res, err
	}
	if l == nil || st == nil {
		return res, fmt.Errorf("%w: no master holds the lock of %s/%s", ErrNotHolder, cluster, brokerName)
	}
	if to != 0 && to == l.Node {
		return res, fmt.Errorf("%w: node %d is already the master", ErrNoCandidate, to)
	}
	res.From, res.FromEpoch = l.Node, st.Epoch
	start := now()
	key := SwitchoverKey(cluster, brokerName)
	ok, err := c.CAS(ctx, key, encode(Switchover{To: to, Requested: start}), 0)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, fmt.Errorf("%w: a switchover of %s/%s is already pending (%s)", ErrCASConflict, cluster, brokerName, key)
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.Delete(dctx, key)
			cancel()
			return res, fmt.Errorf("%w: %w", ErrSwitchoverTimeout, ctx.Err())
		case <-t.C:
		}
		// Whether the request is still pending is read before the leader and state: the
		// master records the handover in the state before it deletes the request, so a
		// request seen gone and a state read after it without a handover means it was dropped.
		_, pending, perr := c.Get(ctx, key)
		nl, nst, err := ReadLeader(ctx, c, cluster, brokerName)
		if err != nil || nl == nil || nst == nil {
			continue
		}
		if nl.Node != res.From && nl.HAAddr != "" && nst.Epoch > res.FromEpoch && nst.Master == nl.Node {
			res.To, res.ToEpoch, res.Took = nl.Node, nst.Epoch, now().Sub(start)
			return res, nil
		}
		if perr == nil && !pending && nl.Node == res.From && nst.Handover == 0 {
			return res, fmt.Errorf("%w: the master dropped the request (no in-sync slave caught up in time?)", ErrSwitchoverTimeout)
		}
	}
}
