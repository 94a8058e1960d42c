package nameserver

import "github.com/rmqha/rmqha/libs/props"

// RocketMQ 4.9's namesrv.conf keys. NamesrvStartup hands the file to
// MixAll.properties2Object for NamesrvConfig and NettyServerConfig (every one-parameter
// setter is a key, setFooBar → fooBar). A namesrv.conf written for RocketMQ 4.9.8 starts here:
// listenPort, kvConfigPath and serverChannelMaxIdleTimeSeconds are bound to Config; the others (Netty threads and buffers, the
// product environment, RocketMQ's own properties file and blacklist) mean nothing here and
// are reported at start with one warning naming them. A value RocketMQ could not parse is
// refused as RocketMQ refuses it; a key neither bound nor in this table is a typo and stops
// start-up.
var rocketMQ49Keys = props.JavaKeys{
	// NamesrvConfig
	"rocketmqHome":       props.JavaString,
	"kvConfigPath":       props.JavaString,
	"configStorePath":    props.JavaString,
	"productEnvName":     props.JavaString,
	"clusterTest":        props.JavaBool,
	"orderMessageEnable": props.JavaBool,
	"configBlackList":    props.JavaString,
	// NettyServerConfig
	"listenPort":                         props.JavaInt,
	"serverWorkerThreads":                props.JavaInt,
	"serverCallbackExecutorThreads":      props.JavaInt,
	"serverSelectorThreads":              props.JavaInt,
	"serverOnewaySemaphoreValue":         props.JavaInt,
	"serverAsyncSemaphoreValue":          props.JavaInt,
	"serverChannelMaxIdleTimeSeconds":    props.JavaInt,
	"serverSocketSndBufSize":             props.JavaInt,
	"serverSocketRcvBufSize":             props.JavaInt,
	"writeBufferHighWaterMark":           props.JavaInt,
	"writeBufferLowWaterMark":            props.JavaInt,
	"serverSocketBacklog":                props.JavaInt,
	"serverPooledByteBufAllocatorEnable": props.JavaBool,
	"useEpollNativeSelector":             props.JavaBool,
}

// RocketMQKeys returns the keys of a RocketMQ 4.9 namesrv.conf with their setter types (for
// props.Options.Foreign and the value check).
func RocketMQKeys() props.JavaKeys { return rocketMQ49Keys }
