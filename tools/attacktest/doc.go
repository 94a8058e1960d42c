// Package attacktest plays attacks against the built binaries of a broker group, as a stranger
// on the same network would, and ends every case with the group's invariants: every process
// alive, every acknowledged message present and byte-exact on the master and the slave, and a
// normal send answered SEND_OK.
//
// The group is tools/e2e's (real namesrv, master and slave processes, a random HA secret per
// run); the slave dials its master through a Front, a TCP forwarder the test can record
// through, or switch to an impostor. HA link cases:
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
// Name server (registration) attacks, by a client without the registration secret:
//
//   - REGISTER_BROKER as the group's master at its own address with a higher declared epoch
//     (and its own HA address, which would make a slave without haMasterAddress follow it);
//   - REGISTER_BROKER as brokerId 1 with the master's address (would remove the master);
//   - REGISTER_BROKER as the master, at its address, with an empty topic table (would empty
//     the route);
//   - REGISTER_BROKER with a 1 MiB cluster name;
//   - UNREGISTER_BROKER of the real master and slave;
//   - a REGISTER_BROKER recorded on the wire, played again later (and turned into an
//     UNREGISTER_BROKER).
//
// Run with the binaries built (scripts/build.sh bin, then RMQHA_BIN_DIR=$PWD/bin), or let
// tools/e2e build them.
package attacktest
