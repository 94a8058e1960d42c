package broker

import (
	"fmt"
	"strconv"
	"strings"
)

// RocketMQ 4.9's broker.conf keys. BrokerStartup hands the file to MixAll.properties2Object
// for BrokerConfig, MessageStoreConfig, NettyServerConfig and NettyClientConfig: every setter
// with one int, long, double, float, boolean or String parameter is a key (setFooBar → fooBar),
// and a key that matches none is ignored. A file written for RocketMQ 4.9.8 therefore starts
// here too: keys bound to Config fields take effect, the others (thread pools, Netty buffers,
// DLedger, transient store pool, ...) mean nothing here and are reported at start with a
// warning naming them. A value RocketMQ could not parse (an int key that is not a number) is
// refused as RocketMQ refuses it; a key neither here nor in this table is still a typo and
// stops start-up.

// javaKind is the parameter type of a RocketMQ setter.
type javaKind int

const (
	javaString javaKind = iota
	javaInt
	javaLong
	javaDouble
	javaBool
)

// rocketMQ49Keys are the keys of RocketMQ 4.9.8's four configuration classes, with the type
// their setter parses (names taken from its sources).
var rocketMQ49Keys = map[string]javaKind{
	"accessMessageInMemoryMaxRatio":            javaInt,
	"aclEnable":                                javaBool,
	"adminBrokerThreadPoolNums":                javaInt,
	"autoCreateSubscriptionGroup":              javaBool,
	"autoCreateTopicEnable":                    javaBool,
	"autoDeleteUnusedStats":                    javaBool,
	"bitMapLengthConsumeQueueExt":              javaInt,
	"brokerClusterName":                        javaString,
	"brokerFastFailureEnable":                  javaBool,
	"brokerIP1":                                javaString,
	"brokerIP2":                                javaString,
	"brokerId":                                 javaLong,
	"brokerName":                               javaString,
	"brokerPermission":                         javaInt,
	"brokerRole":                               javaString,
	"brokerTopicEnable":                        javaBool,
	"channelNotActiveInterval":                 javaLong,
	"checkCRCOnRecover":                        javaBool,
	"cleanFileForciblyEnable":                  javaBool,
	"cleanResourceInterval":                    javaInt,
	"clientAsyncSemaphoreValue":                javaInt,
	"clientCallbackExecutorThreads":            javaInt,
	"clientChannelMaxIdleTimeSeconds":          javaInt,
	"clientCloseSocketIfTimeout":               javaBool,
	"clientManageThreadPoolNums":               javaInt,
	"clientManagerThreadPoolQueueCapacity":     javaInt,
	"clientOnewaySemaphoreValue":               javaInt,
	"clientPooledByteBufAllocatorEnable":       javaBool,
	"clientSocketRcvBufSize":                   javaInt,
	"clientSocketSndBufSize":                   javaInt,
	"clientWorkerThreads":                      javaInt,
	"clusterTopicEnable":                       javaBool,
	"commercialBaseCount":                      javaInt,
	"commercialBigCount":                       javaInt,
	"commercialEnable":                         javaBool,
	"commercialTimerCount":                     javaInt,
	"commercialTransCount":                     javaInt,
	"commitCommitLogLeastPages":                javaInt,
	"commitCommitLogThoroughInterval":          javaInt,
	"commitIntervalCommitLog":                  javaInt,
	"compressedRegister":                       javaBool,
	"configBlackList":                          javaString,
	"connectTimeoutMillis":                     javaInt,
	"consumerFallbehindThreshold":              javaLong,
	"consumerManageThreadPoolNums":             javaInt,
	"consumerManagerThreadPoolQueueCapacity":   javaInt,
	"dLegerGroup":                              javaString,
	"dLegerPeers":                              javaString,
	"dLegerSelfId":                             javaString,
	"debugLockEnable":                          javaBool,
	"defaultQueryMaxNum":                       javaInt,
	"defaultTopicQueueNums":                    javaInt,
	"deleteCommitLogFilesInterval":             javaInt,
	"deleteConsumeQueueFilesInterval":          javaInt,
	"deleteWhen":                               javaString,
	"destroyMapedFileIntervalForcibly":         javaInt,
	"disableConsumeIfConsumerReadSlowly":       javaBool,
	"diskFallRecorded":                         javaBool,
	"diskMaxUsedSpaceRatio":                    javaInt,
	"duplicationEnable":                        javaBool,
	"enableBatchPush":                          javaBool,
	"enableCalcFilterBitMap":                   javaBool,
	"enableConsumeQueueExt":                    javaBool,
	"enableDLegerCommitLog":                    javaBool,
	"enableDetailStat":                         javaBool,
	"enableLmq":                                javaBool,
	"enableMultiDispatch":                      javaBool,
	"enablePropertyFilter":                     javaBool,
	"enableScheduleAsyncDeliver":               javaBool,
	"enableScheduleMessageStats":               javaBool,
	"endTransactionPoolQueueCapacity":          javaInt,
	"endTransactionThreadPoolNums":             javaInt,
	"expectConsumerNumUseFilter":               javaInt,
	"fastFailIfNoBufferInStorePool":            javaBool,
	"fetchNamesrvAddrByAddressServer":          javaBool,
	"fileReservedTime":                         javaInt,
	"filterDataCleanTimeSpan":                  javaLong,
	"filterServerNums":                         javaInt,
	"filterSupportRetry":                       javaBool,
	"flushCommitLogLeastPages":                 javaInt,
	"flushCommitLogThoroughInterval":           javaInt,
	"flushCommitLogTimed":                      javaBool,
	"flushConsumeQueueLeastPages":              javaInt,
	"flushConsumeQueueThoroughInterval":        javaInt,
	"flushConsumerOffsetHistoryInterval":       javaInt,
	"flushConsumerOffsetInterval":              javaInt,
	"flushDelayOffsetInterval":                 javaLong,
	"flushDiskType":                            javaString,
	"flushIntervalCommitLog":                   javaInt,
	"flushIntervalConsumeQueue":                javaInt,
	"flushLeastPagesWhenWarmMapedFile":         javaInt,
	"forceRegister":                            javaBool,
	"haHousekeepingInterval":                   javaInt,
	"haListenPort":                             javaInt,
	"haMasterAddress":                          javaString,
	"haSendHeartbeatInterval":                  javaInt,
	"haSlaveFallbehindMax":                     javaInt,
	"haTransferBatchSize":                      javaInt,
	"heartbeatThreadPoolNums":                  javaInt,
	"heartbeatThreadPoolQueueCapacity":         javaInt,
	"highSpeedMode":                            javaBool,
	"isolateLogEnable":                         javaBool,
	"listenPort":                               javaInt,
	"longPollingEnable":                        javaBool,
	"mappedFileSizeCommitLog":                  javaInt,
	"mappedFileSizeConsumeQueue":               javaInt,
	"mappedFileSizeConsumeQueueExt":            javaInt,
	"maxDelayTime":                             javaInt,
	"maxErrorRateOfBloomFilter":                javaInt,
	"maxHashSlotNum":                           javaInt,
	"maxIndexNum":                              javaInt,
	"maxLmqConsumeQueueNum":                    javaInt,
	"maxMessageSize":                           javaInt,
	"maxMsgsNumBatch":                          javaInt,
	"maxTransferBytesOnMessageInDisk":          javaInt,
	"maxTransferBytesOnMessageInMemory":        javaInt,
	"maxTransferCountOnMessageInDisk":          javaInt,
	"maxTransferCountOnMessageInMemory":        javaInt,
	"messageDelayLevel":                        javaString,
	"messageIndexEnable":                       javaBool,
	"messageIndexSafe":                         javaBool,
	"messageStorePlugIn":                       javaString,
	"msgTraceTopicName":                        javaString,
	"namesrvAddr":                              javaString,
	"notifyConsumerIdsChangedEnable":           javaBool,
	"offsetCheckInSlave":                       javaBool,
	"osPageCacheBusyTimeOutMills":              javaLong,
	"preferredLeaderId":                        javaString,
	"processReplyMessageThreadPoolNums":        javaInt,
	"pullMessageThreadPoolNums":                javaInt,
	"pullThreadPoolQueueCapacity":              javaInt,
	"putMessageFutureThreadPoolNums":           javaInt,
	"putMsgIndexHightWater":                    javaInt,
	"putThreadPoolQueueCapacity":               javaInt,
	"queryMessageThreadPoolNums":               javaInt,
	"queryThreadPoolQueueCapacity":             javaInt,
	"readOnlyCommitLogStorePaths":              javaString,
	"redeleteHangedFileInterval":               javaInt,
	"regionId":                                 javaString,
	"registerBrokerTimeoutMills":               javaInt,
	"registerNameServerPeriod":                 javaInt,
	"rejectTransactionMessage":                 javaBool,
	"replyThreadPoolQueueCapacity":             javaInt,
	"rocketmqHome":                             javaString,
	"scheduleAsyncDeliverMaxPendingLimit":      javaInt,
	"scheduleAsyncDeliverMaxResendNum2Blocked": javaInt,
	"sendMessageThreadPoolNums":                javaInt,
	"sendThreadPoolQueueCapacity":              javaInt,
	"serverAsyncSemaphoreValue":                javaInt,
	"serverCallbackExecutorThreads":            javaInt,
	"serverChannelMaxIdleTimeSeconds":          javaInt,
	"serverOnewaySemaphoreValue":               javaInt,
	"serverPooledByteBufAllocatorEnable":       javaBool,
	"serverSelectorThreads":                    javaInt,
	"serverSocketBacklog":                      javaInt,
	"serverSocketRcvBufSize":                   javaInt,
	"serverSocketSndBufSize":                   javaInt,
	"serverWorkerThreads":                      javaInt,
	"shortPollingTimeMills":                    javaLong,
	"slaveReadEnable":                          javaBool,
	"slaveTimeout":                             javaInt,
	"startAcceptSendRequestTimeStamp":          javaLong,
	"storePathCommitLog":                       javaString,
	"storePathDLedgerCommitLog":                javaString,
	"storePathRootDir":                         javaString,
	"storeReplyMessageEnable":                  javaBool,
	"syncFlushTimeout":                         javaInt,
	"traceOn":                                  javaBool,
	"traceTopicEnable":                         javaBool,
	"transactionCheckInterval":                 javaLong,
	"transactionCheckMax":                      javaInt,
	"transactionTimeOut":                       javaLong,
	"transferMsgByHeap":                        javaBool,
	"transientStorePoolEnable":                 javaBool,
	"transientStorePoolSize":                   javaInt,
	"useEpollNativeSelector":                   javaBool,
	"useReentrantLockWhenPutMessage":           javaBool,
	"useTLS":                                   javaBool,
	"waitTimeMillsInHeartbeatQueue":            javaLong,
	"waitTimeMillsInPullQueue":                 javaLong,
	"waitTimeMillsInSendQueue":                 javaLong,
	"waitTimeMillsInTransactionQueue":          javaLong,
	"warmMapedFileEnable":                      javaBool,
	"writeBufferHighWaterMark":                 javaInt,
	"writeBufferLowWaterMark":                  javaInt,
}

// RocketMQKeys returns every key RocketMQ 4.9 reads from broker.conf (for props.Options.Foreign).
func RocketMQKeys() map[string]bool {
	out := make(map[string]bool, len(rocketMQ49Keys))
	for k := range rocketMQ49Keys {
		out[k] = true
	}
	return out
}

// CheckRocketMQValue refuses a value of a RocketMQ key that RocketMQ's own parsing refuses
// (Integer.parseInt, Long.parseLong, Double.parseDouble; booleans and strings take anything).
func CheckRocketMQValue(key, value string) error {
	kind, ok := rocketMQ49Keys[key]
	if !ok {
		return nil
	}
	var err error
	v := strings.TrimSpace(value)
	switch kind {
	case javaInt:
		_, err = strconv.ParseInt(v, 10, 32)
	case javaLong:
		_, err = strconv.ParseInt(v, 10, 64)
	case javaDouble:
		_, err = strconv.ParseFloat(v, 64)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %q is not a number RocketMQ parses (%v)", ErrInvalidConfig, key, value, err)
	}
	return nil
}
