package commitlog

import (
	"net/netip"
	"time"

	"github.com/rmqha/rmqha/libs/commitlog/vfs"
)

// The exported API other modules code against, checked at compile time.
var (
	_ func() Config                                                            = DefaultConfig
	_ func(Config) error                                                       = Config.Validate
	_ func(Config) (*Store, error)                                             = Open
	_ func(string) (FlushDiskType, error)                                      = ParseFlushDiskType
	_ func(*Store, *Message) (AppendResult, error)                             = (*Store).Append
	_ func(*Store, []*Message) ([]AppendResult, error)                         = (*Store).AppendBatch
	_ func(*Store, int64, time.Time) <-chan error                              = (*Store).WaitFlush
	_ func(*Store) int64                                                       = (*Store).FlushedOffset
	_ func(*Store) int64                                                       = (*Store).MinOffset
	_ func(*Store) int64                                                       = (*Store).MaxOffset
	_ func(*Store) int64                                                       = (*Store).SegmentSize
	_ func(*Store, int64) ([]byte, error)                                      = (*Store).ReadRecord
	_ func(*Store, int64, int) ([]byte, error)                                 = (*Store).ReadRaw
	_ func(*Store, int64, []byte) error                                        = (*Store).AppendRaw
	_ func(*Store, int64) error                                                = (*Store).Truncate
	_ func(*Store, int64) error                                                = (*Store).Reset
	_ func(*Store, func(int64))                                                = (*Store).OnAppend
	_ func(*Store, func(string, int32, int64))                                 = (*Store).OnDispatch
	_ func(*Store, string, int32, int64, int, int, func(int64) bool) GetResult = (*Store).GetMessages
	_ func(*Store, string, int32) int64                                        = (*Store).QueueMinOffset
	_ func(*Store, string, int32) int64                                        = (*Store).QueueMaxOffset
	_ func(*Store, string, int32, int64) int64                                 = (*Store).OffsetByTime
	_ func(*Store, string, int32) (int64, error)                               = (*Store).EarliestMessageTime
	_ func(*Store) map[string][]int32                                          = (*Store).Queues
	_ func(*Store, string) error                                               = (*Store).DeleteTopic
	_ func(*Store, string, int64) *Reader                                      = (*Store).RegisterReader
	_ func(*Reader, int64)                                                     = (*Reader).Advance
	_ func(*Reader)                                                            = (*Reader).Close
	_ func(*Reader) <-chan struct{}                                            = (*Reader).Removed
	_ func(*Store) error                                                       = (*Store).Err
	_ func(*Store) Stats                                                       = (*Store).Stats
	_ func(*Store) error                                                       = (*Store).Close
	_ func([]byte, *Record) []byte                                             = AppendRecord
	_ func([]byte) (*Record, int, error)                                       = DecodeRecord
	_ func(string) map[string]string                                           = ParseProperties
	_ func([]byte, map[string]string) []byte                                   = AppendProperties
	_ func(string) int32                                                       = JavaStringHash
	_ func(netip.AddrPort, int64) string                                       = OffsetMsgID
	_ func(string) (netip.AddrPort, int64, error)                              = ParseOffsetMsgID
	_ vfs.FS                                                                   = vfs.Default
	_ vfs.FS                                                                   = vfs.NewMem()
	_ func(int64) *vfs.MemFS                                                   = vfs.NewMem().CrashClone
	_ vfs.FS                                                                   = vfs.NewErrorFS(vfs.NewMem(), &vfs.Switch{})
	_                                                                          = []GetStatus{Found, NoMatchedMessage, MessageWasRemoving, OffsetFoundNull, OffsetOverflowOne, OffsetOverflowBadly, OffsetTooSmall, NoMessageInQueue, NoMatchedLogicQueue}
	_                                                                          = []error{ErrMessageTooLarge, ErrTopicEmpty, ErrTopicTooLong, ErrTopicInvalid, ErrPropertiesTooLarge, ErrReadOnly, ErrFlushTimeout, ErrOffsetMismatch, ErrOffsetTooOld, ErrCorrupt, ErrClosed}
	_                                                                          = Config{Dir: "", SegmentSize: 0, CQUnitsPerFile: 0, FlushDiskType: AsyncFlush, FlushInterval: 0, SyncFlushTimeout: 0, MaxMessageSize: 0, FileReservedTime: 0, DeleteWhen: nil, DiskMaxUsedSpaceRatio: 0, StoreHost: netip.AddrPort{}, TagsCode: func(string, Props, int64) int64 { return 0 }, FS: nil, Logger: nil, Now: nil}
	_                                                                          = Message{Topic: "", QueueID: 0, Flag: 0, Body: nil, Properties: "", SysFlag: 0, BornTimestamp: 0, BornHost: netip.AddrPort{}, ReconsumeTimes: 0, PreparedTransactionOffset: 0}
	_                                                                          = AppendResult{WroteOffset: 0, WroteBytes: 0, QueueOffset: 0, MsgID: "", StoreTimestamp: 0, EndOffset: 0}
	_                                                                          = GetResult{Status: Found, Records: nil, NextBeginOffset: 0, MinOffset: 0, MaxOffset: 0, MaxPhysOffsetScanned: 0}
	_                                                                          = SyncFlush
)
