// Package harness starts the real parts a cross-service test needs and
// injects faults into them:
//
//   - a Consul agent (the `consul` binary built by scripts/deps.sh, found
//     through RMQHA_CONSUL_BIN or PATH) in dev mode on free loopback ports;
//   - a NATS server, embedded in the test process, or the `nats-server`
//     binary for the local group;
//   - the project's own binaries as child processes on free ports with their
//     own data folders, which can be killed (SIGKILL), paused (SIGSTOP),
//     resumed, stopped (SIGTERM) and restarted;
//   - a TCP proxy that can delay, throttle and cut a link.
//
// Every starter has an error-returning form for programs (the local group
// launcher) and a testing.TB form that fails the test and registers cleanup.
// Readiness is checked by polling with a deadline, never by sleeping. Metrics
// reads a service's /metrics page for tests that assert on its counters.
package harness
