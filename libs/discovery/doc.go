// Package discovery is the Consul layout of the broker registry, shared by
// the name server (which writes it), slaves (which find their master's HA
// address in it), metasync (which finds masters in it) and the admin tools.
//
// Layout:
//
//	service  "rocketmq-broker"                 one instance per live broker
//	  ID     "rmqha/<cluster>/<brokerName>/<brokerId>"
//	  Address, Port                            the client address (brokerIP1:listenPort)
//	  Tags   "cluster=<c>" "broker=<b>" "id=<n>" "role=master|slave" "epoch=<e>"
//	  Meta   cluster, brokerName, brokerId, epoch, addr, haAddr, httpAddr
//	  Checks "ttl"  passes on every REGISTER_BROKER, critical after the broker
//	                stops registering for brokerChannelExpiredTime
//	         "http" the agent GETs http://<httpAddr>/status every 2 s (httpAddr
//	                is brokerIP2:httpPort, the address for the group itself; critical
//	                when the process stops answering: killed, hung or paused,
//	                within two intervals); "tcp", a dial of the client address,
//	                instead when the broker serves no status port
//	KV     rmqha/topics/<cluster>/<brokerName> the master's topic table
//	                (TopicConfigSerializeWrapper JSON, RocketMQ's shape)
//
// Readers use blocking queries (an index and a wait time), never a fixed
// polling period, and consider only instances whose checks all pass.
// Among several passing masters of one group the one with the highest epoch
// (then the lowest address) is the master: never two.
//
// The Consul address and credentials come from the environment exactly as
// Consul's own tools read them (CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN,
// CONSUL_CACERT, ...).
package discovery
