package hawire

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWaitFuncCompletesThroughTakeCompleted: callback waiters complete like
// channel waiters (by ack in end order, by deadline, on close), each exactly
// once, and only through TakeCompleted, so the driver calls them outside its
// lock; a status known at once is returned and the callback never runs.
func TestWaitFuncCompletesThroughTakeCompleted(t *testing.T) {
	s := testMasterState(t, "", EpochEntry{1, 0})
	got := map[int64][]ReplStatus{}
	wait := func(end int64, deadline time.Time) (ReplStatus, bool) {
		return s.WaitFunc(end, deadline, 1000, t0, func(st ReplStatus) { got[end] = append(got[end], st) })
	}
	run := func() int {
		done := s.TakeCompleted(nil)
		for _, c := range done {
			c.Cb.Replicated(c.Status)
		}
		return len(done)
	}
	st, now := wait(10, t0.Add(time.Second))
	require.True(t, now)
	require.Equal(t, ReplSlaveNotAvailable, st)
	streamingPeer(t, s, 1, 1, 0, 0)
	require.NoError(t, s.Sent(1, 0, 1000, t0))
	for i := int64(1); i <= 6; i++ {
		_, now := wait(i*100, t0.Add(time.Duration(i)*time.Second))
		require.False(t, now)
	}
	// A channel waiter and callback waiters share the queue.
	ch := s.Wait(250, t0.Add(time.Minute), 1000, t0)
	require.Equal(t, 7, s.Pending())
	require.NoError(t, s.Ack(1, Ack{Written: 300}, 1000, t0))
	require.Empty(t, got, "nothing runs before TakeCompleted")
	require.Equal(t, 3, run())
	require.Equal(t, ReplOK, <-ch)
	require.Equal(t, map[int64][]ReplStatus{100: {ReplOK}, 200: {ReplOK}, 300: {ReplOK}}, got)
	s.Expire(t0.Add(4 * time.Second))
	require.Equal(t, 1, run())
	require.Equal(t, []ReplStatus{ReplTimeout}, got[400])
	s.Close()
	require.Equal(t, 2, run())
	require.Equal(t, []ReplStatus{ReplTimeout}, got[500])
	require.Equal(t, []ReplStatus{ReplTimeout}, got[600])
	require.Zero(t, run())
	require.Zero(t, s.Pending())
	st, now = wait(200, t0.Add(time.Second))
	require.True(t, now, "already acknowledged")
	require.Equal(t, ReplOK, st)
	_, now = wait(900, t0)
	require.True(t, now, "deadline passed")
}
