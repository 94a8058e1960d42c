// Package nsadmintest holds process-level tests of the name server's admin codes with this
// checkout's binaries, a real Consul agent and the unmodified rocketmq-client-go:
//
//   - the KV configuration on Consul is shared by two name servers and survives a restart;
//     unsigned writes are refused (NO_PERMISSION) and store nothing;
//   - WIPE_WRITE_PERM_OF_BROKER makes the routes of the broker's topics read-only, so a new
//     producer finds no writable queue while consumers keep reading, and
//     ADD_WRITE_PERM_OF_BROKER gives the write permission back; every acknowledged message is
//     stored once;
//   - rocketmq-client-go's admin DeleteTopic: the broker deletes the topic, the name server
//     refuses the unsigned DELETE_TOPIC_IN_NAMESRV (the client does not look at the answer's
//     code), and the route goes once the broker registers without the topic.
package nsadmintest
