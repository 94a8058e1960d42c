// Package conftest holds process-level tests of configuration compatibility: the master binary
// of this checkout started from a broker.conf holding every key RocketMQ 4.9.8 reads
// (libs/broker/testdata/rocketmq-4.9.8-broker.conf: BrokerConfig, MessageStoreConfig,
// NettyServerConfig and NettyClientConfig, with their defaults) starts, names the keys that
// mean nothing here in one warning, and serves; with mappedFileSizeCommitLog=4194304 and the
// default maxMessageSize (RocketMQ starts with that too). A typo and a number RocketMQ cannot
// parse still stop start-up, naming the key.
package conftest
