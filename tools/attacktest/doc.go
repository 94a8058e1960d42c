// Package attacktest plays attacks a stranger on the network can try against a running broker
// group (the project's name server, master and slave binaries, unmodified
// rocketmq-client-go clients) and checks after each one that nothing was gained: the route
// still names the real master and slave with their topics, the slave replicates from the real
// master, every process is alive, a normal send is answered SEND_OK, and every acknowledged
// message is present and byte-exact on master and slave.
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
// The tests need the binaries (scripts/build.sh bin, RMQHA_BIN_DIR) like tools/e2e.
package attacktest
