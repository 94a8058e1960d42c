// Package filtertest holds process-level tests of SQL92 property filtering: a name server,
// a SYNC_MASTER and its slave started from this checkout's binaries (the tools/e2e fixture,
// with its HA and registration secrets), driven by the unmodified rocketmq-client-go.
//
// What the tests check:
//
//   - with enablePropertyFilter=true, a push consumer subscribing with
//     consumer.MessageSelector{Type: consumer.SQL92, Expression: "a > 5"} receives exactly the
//     messages whose property a is above 5, byte for byte and once each; messages without a, or
//     with a value that is not a number, are not delivered, and the group's committed offset
//     still moves past them; a pull consumer's PullFrom with a SQL92 selector gets the same
//     filtering, and a selector that does not compile is refused (SUBSCRIPTION_PARSE_FAILED
//     for PullFrom; for a push consumer FILTER_DATA_NOT_EXIST in the client's pull warning);
//   - with enablePropertyFilter=false (the default), the same push consumer starts (the Go
//     client does not send CHECK_CLIENT_CONFIG) but receives nothing; what the client surfaces
//     is its pull warning carrying the broker's answer, SYSTEM_ERROR "The broker does not
//     support consumer to filter message by SQL92", and PullFrom returns that as its error.
package filtertest
