// Package attacktest plays attacks against the built binaries of a broker group, as a stranger
// on the same network would, and ends every case with the group's invariants: every process
// alive, every acknowledged message present and byte-exact on the master and the slave, and a
// normal send answered SEND_OK.
//
// The group is tools/e2e's (real namesrv, master and slave processes, a random HA secret per
// run); the slave dials its master through a Front, a TCP forwarder the test can record
// through, or switch to an impostor. Cases so far, all on the HA link (issue 15):
//
//   - FakeMaster: the slave's master address answers DIVERGED at 0 and OFFSET_TOO_OLD without
//     the secret (and with a wrong one) for 20 s: the slave's CommitLog and epoch file stay
//     byte-identical, it redials only at its backoff's pace, and it resumes from the real
//     master afterwards.
//   - FakeSlave: with the real slave down, peers without the secret or with a wrong one connect
//     to the master's HA port and acknowledge everything: SYNC_MASTER sends still answer
//     SLAVE_NOT_AVAILABLE, never SEND_OK.
//   - Replay: a genuine handshake recorded on the wire is replayed to the master (refused
//     NOT_AUTHORISED), and the master's recorded Hello and Accept are replayed to the slave
//     (refused: the proof does not cover the slave's fresh nonce).
//
// Run with the binaries built (scripts/build.sh bin, then RMQHA_BIN_DIR=$PWD/bin), or let
// tools/e2e build them.
package attacktest
