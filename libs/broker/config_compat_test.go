package broker

import (
	"testing"
	"time"

	"github.com/rmqha/rmqha/libs/remoting"
	"github.com/stretchr/testify/require"
)

// TestSmallCommitLogFilesWithDefaultMaxMessageSize: mappedFileSizeCommitLog=4194304 with the
// default maxMessageSize (4 MiB) starts, as RocketMQ does; only a message whose record cannot
// fit an empty file is refused.
func TestSmallCommitLogFilesWithDefaultMaxMessageSize(t *testing.T) {
	cfg := testConfig(t)
	cfg.MappedFileSizeCommitLog = 4194304
	cfg.MaxMessageSize = DefaultConfig().MaxMessageSize
	b := startBroker(t, cfg)
	c := newTestClient(t)

	require.Equal(t, remoting.Success, send(t, c, b.Addr(), "Small", 0, "", "small").Code)
	resp := invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("Small", 0, ""), make([]byte, 2<<20))
	require.Equal(t, remoting.Success, resp.Code, resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("Small", 0, ""), make([]byte, 3<<20))
	require.Equal(t, remoting.Success, resp.Code, "a 3 MiB message opens the next file: %s", resp.Remark)
	resp = invoke(t, c, b.Addr(), remoting.SendMessage, sendExt("Small", 0, ""), make([]byte, cfg.MaxMessageSize))
	require.Equal(t, remoting.MessageIllegal, resp.Code, "a record larger than a CommitLog file cannot be stored")
	require.Contains(t, resp.Remark, "do not fit")
	require.Equal(t, remoting.Success, send(t, c, b.Addr(), "Small", 0, "", "after").Code)
	require.Eventually(t, func() bool { return b.store.QueueMaxOffset("Small", 0) == 4 }, 10*time.Second, 5*time.Millisecond)
}
