package broker

import (
	"sync"
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// congestedWriter is a send's ResponseWriter on a connection whose peer does not read: while
// congested, WriteNoWait queues nothing and Write waits until release.
type congestedWriter struct {
	remoting.ResponseWriter
	mu        sync.Mutex
	congested bool
	release   chan struct{}
	noWait    []*remoting.Command
	waited    []*remoting.Command
}

func (w *congestedWriter) WriteNoWait(resp *remoting.Command) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.congested {
		return false, nil
	}
	w.noWait = append(w.noWait, resp)
	return true, nil
}

func (w *congestedWriter) Write(resp *remoting.Command) error {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waited = append(w.waited, resp)
	return nil
}

func (w *congestedWriter) answers() (noWait, waited int, last *remoting.Command) {
	w.mu.Lock()
	defer w.mu.Unlock()
	all := append(append([]*remoting.Command{}, w.noWait...), w.waited...)
	if len(all) > 0 {
		last = all[len(all)-1]
	}
	return len(w.noWait), len(w.waited), last
}

// An ack answers the SYNC sends it covers on the goroutine that read it. A send whose client
// does not read (its connection's queue is full) must not hold that goroutine: replAnswered
// returns at once and the pipeline writes that answer when the connection takes it; a send on
// a connection that reads is answered at once, without the pipeline. Each is answered once,
// with the code the ack gave.
func TestAckNeverWaitsForACongestedClient(t *testing.T) {
	b := startBroker(t, testConfig(t))
	pending := func(w remoting.ResponseWriter) *pendingSend {
		ans := newSendAnswer(&remoting.Command{Code: remoting.SendMessage})
		ans.msgID, ans.queueOffset = "id", 7
		p := ans.pending()
		*p = pendingSend{w: w, ans: ans, arrival: time.Now()}
		return p
	}

	slow := &congestedWriter{congested: true, release: make(chan struct{})}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(slow.release) }) }
	t.Cleanup(release)
	returned := make(chan struct{})
	go func() {
		b.replAnswered(pending(slow), hawire.ReplOK)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("the ack goroutine waits for a congested client")
	}
	fast := &congestedWriter{release: make(chan struct{})}
	b.replAnswered(pending(fast), hawire.ReplTimeout)
	n, w, last := fast.answers()
	require.Equal(t, 1, n)
	require.Zero(t, w)
	require.Equal(t, remoting.FlushSlaveTimeout, last.Code)

	n, w, _ = slow.answers()
	require.Zero(t, n+w, "answered while the connection took nothing")
	release() // the peer reads again
	require.Eventually(t, func() bool { _, w, _ := slow.answers(); return w == 1 }, 10*time.Second, 5*time.Millisecond)
	n, w, last = slow.answers()
	require.Equal(t, 0, n)
	require.Equal(t, 1, w)
	require.Equal(t, remoting.Success, last.Code)
	require.Never(t, func() bool { _, w, _ := slow.answers(); return w > 1 }, 200*time.Millisecond, 20*time.Millisecond)
}
