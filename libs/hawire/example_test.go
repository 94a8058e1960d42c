package hawire_test

import (
	"github.com/rmqha/rmqha/libs/hawire"
	"github.com/rmqha/rmqha/libs/hawire/hawiretest"
	"github.com/rmqha/rmqha/libs/hawire/memlog"
)

// How a broker wires the master side: strict-mode check before storing,
// then a SYNC wait keyed by the message's end offset.
func ExampleMaster() {
	store := memlog.New(1 << 30) // the real broker passes its *commitlog.Store
	cfg := hawire.DefaultMasterConfig()
	cfg.Secret = hawiretest.Secret // the broker's haSecret or haSecretFile, shared by the group
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.EpochDir = "" // the broker uses a folder next to its CommitLog
	m, err := hawire.NewMaster(cfg, store)
	if err != nil {
		return
	}
	if err := m.Start(); err != nil {
		return
	}
	defer m.Close()

	if err := m.CanAccept(); err != nil {
		return // strict mode: refuse before storing
	}
	deadline := m.Deadline()          // fixed when the send arrives
	rec := hawiretest.Record(1024, 1) // a CommitLog record
	off, _ := store.Append(rec)
	switch <-m.WaitReplicated(off+int64(len(rec)), deadline) {
	case hawire.ReplOK: // SEND_OK
	case hawire.ReplTimeout: // FLUSH_SLAVE_TIMEOUT
	case hawire.ReplSlaveNotAvailable: // SLAVE_NOT_AVAILABLE
	}
}

// How a broker wires the slave side.
func ExampleSlave() {
	store := memlog.New(1 << 30)
	cfg := hawire.DefaultSlaveConfig()
	cfg.Secret = hawiretest.Secret // the same secret as the master's
	cfg.BrokerID = 1
	s, err := hawire.NewSlave(cfg, store, hawire.StaticDiscovery("127.0.0.1:10912"))
	if err != nil {
		return
	}
	_ = s.Start()
	_ = s.Status() // master address, lag, state, last error
	_ = s.Close()
}
