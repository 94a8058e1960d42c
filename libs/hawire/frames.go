package hawire

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Hello is the master's first frame on a connection.
type Hello struct {
	MinVersion, MaxVersion uint16
	Nonce                  [NonceLen]byte // fresh random bytes; both proofs cover them, so a replayed handshake fails
}

// Handshake is the slave's answer to Hello.
type Handshake struct {
	Version        uint16
	Flags          uint16 // reserved, 0
	Cluster        string
	BrokerName     string
	BrokerID       int64 // ≥ 1
	MinOffset      int64 // slave log MinOffset; MinOffset == MaxOffset means an empty log
	MaxOffset      int64 // slave log MaxOffset: the next byte it needs
	SegmentSize    int64 // must equal the master's
	LastEpoch      int64 // newest epoch in the slave's epoch file, 0 if none
	LastEpochStart int64 // start offset of LastEpoch
	// SlaveNonce is the slave's fresh random bytes (version 2 and later; a
	// version-1 handshake has no such field). The master's proof covers
	// them, so a recorded ACCEPT or ERROR does not verify on another connection.
	SlaveNonce [NonceLen]byte
	Proof      []byte // empty, or the slave's proof, HMAC-SHA256 (ProofLen bytes); see SlaveProof
}

// EpochEntry says that epoch Epoch's data starts at StartOffset. An epoch ends
// where the next entry starts (the last one at the log's MaxOffset).
type EpochEntry struct {
	Epoch       int64
	StartOffset int64
}

// Accept tells the slave the handshake succeeded and where streaming starts.
type Accept struct {
	Epoch       int64 // the master's current epoch
	StartOffset int64 // the first Data frame starts here
	MasterMin   int64
	MasterMax   int64
	Confirmed   int64 // highest offset held by InSyncReplicas copies
	Epochs      []EpochEntry
	Proof       []byte // empty, or the master's proof (ProofLen bytes); see AcceptProof
}

// Data carries whole CommitLog records starting at StartOffset.
type Data struct {
	Epoch       int64 // epoch that wrote these records; a batch never crosses an epoch boundary
	StartOffset int64
	MasterMax   int64
	Confirmed   int64
	CRC         uint32 // CRC-32C (Castagnoli) of Records
	Records     []byte // aliases the frame buffer after decoding
}

// Heartbeat is sent by the master when it has had nothing to send for HeartbeatInterval.
type Heartbeat struct {
	Epoch      int64
	MasterMax  int64
	Confirmed  int64
	NextOffset int64 // where the next Data frame will start
}

// Ack is the slave's acknowledgement; it doubles as the slave's heartbeat.
type Ack struct {
	Written int64 // slave MaxOffset after its last append
	Flushed int64 // slave FlushedOffset, ≤ Written
}

// ErrorFrame precedes a close.
type ErrorFrame struct {
	Code    ErrorCode
	Offset  int64
	Message string
	// Extended marks the version-2 trailer a master appends to its
	// refusals: its epoch and log bounds and its proof. Absent on frames a
	// slave sends and on refusals sent before a handshake could be read.
	Extended    bool
	MasterEpoch int64
	MasterMin   int64
	MasterMax   int64
	Proof       []byte // empty, or the master's proof (ProofLen bytes); see ErrorProof
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchCRC is the CRC carried by a Data frame.
func BatchCRC(records []byte) uint32 { return crc32.Checksum(records, castagnoli) }

// ---------------------------------------------------------------- encoding

// beginFrame appends the 5-byte envelope with a placeholder length.
func beginFrame(dst []byte, t FrameType) ([]byte, int) {
	start := len(dst)
	return append(dst, 0, 0, 0, 0, byte(t)), start
}

// endFrame patches the length (type + body) of the frame that starts at start.
func endFrame(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

func appendStr(dst []byte, s string) []byte {
	if len(s) > math.MaxUint16 {
		s = s[:math.MaxUint16]
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func appendI64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

// AppendHello appends a complete Hello frame.
func AppendHello(dst []byte, h Hello) []byte {
	dst, s := beginFrame(dst, FrameHello)
	dst = binary.BigEndian.AppendUint32(dst, Magic)
	dst = binary.BigEndian.AppendUint16(dst, h.MinVersion)
	dst = binary.BigEndian.AppendUint16(dst, h.MaxVersion)
	dst = append(dst, h.Nonce[:]...)
	return endFrame(dst, s)
}

// appendHandshakeBody appends the Handshake body; the proof is computed over
// this body with an empty proof.
func appendHandshakeBody(dst []byte, h Handshake) []byte {
	dst = binary.BigEndian.AppendUint32(dst, Magic)
	dst = binary.BigEndian.AppendUint16(dst, h.Version)
	dst = binary.BigEndian.AppendUint16(dst, h.Flags)
	dst = appendStr(dst, h.Cluster)
	dst = appendStr(dst, h.BrokerName)
	dst = appendI64(dst, h.BrokerID)
	dst = appendI64(dst, h.MinOffset)
	dst = appendI64(dst, h.MaxOffset)
	dst = appendI64(dst, h.SegmentSize)
	dst = appendI64(dst, h.LastEpoch)
	dst = appendI64(dst, h.LastEpochStart)
	if h.Version >= Version2 {
		dst = append(dst, h.SlaveNonce[:]...)
	}
	return appendProof(dst, h.Proof)
}

// appendProof appends a u8 length and the proof bytes (at most 255).
func appendProof(dst, p []byte) []byte {
	if len(p) > 255 {
		p = p[:255]
	}
	dst = append(dst, byte(len(p)))
	return append(dst, p...)
}

// AppendHandshake appends a complete Handshake frame.
func AppendHandshake(dst []byte, h Handshake) []byte {
	dst, s := beginFrame(dst, FrameHandshake)
	dst = appendHandshakeBody(dst, h)
	return endFrame(dst, s)
}

// AppendAccept appends a complete Accept frame.
func AppendAccept(dst []byte, a Accept) []byte {
	dst, s := beginFrame(dst, FrameAccept)
	dst = appendAcceptBody(dst, a)
	return endFrame(dst, s)
}

// appendAcceptBody appends the Accept body; the master's proof is computed
// over this body with an empty proof.
func appendAcceptBody(dst []byte, a Accept) []byte {
	dst = appendI64(dst, a.Epoch)
	dst = appendI64(dst, a.StartOffset)
	dst = appendI64(dst, a.MasterMin)
	dst = appendI64(dst, a.MasterMax)
	dst = appendI64(dst, a.Confirmed)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(a.Epochs)))
	for _, e := range a.Epochs {
		dst = appendI64(dst, e.Epoch)
		dst = appendI64(dst, e.StartOffset)
	}
	return appendProof(dst, a.Proof)
}

// AppendDataHeader appends the envelope and fixed part of a Data frame whose
// records (recordsLen bytes, CRC d.CRC) the caller writes right after it, so
// large batches go to the socket without being copied.
func AppendDataHeader(dst []byte, d Data, recordsLen int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(1+DataHeaderLen+recordsLen))
	dst = append(dst, byte(FrameData))
	dst = appendI64(dst, d.Epoch)
	dst = appendI64(dst, d.StartOffset)
	dst = appendI64(dst, d.MasterMax)
	dst = appendI64(dst, d.Confirmed)
	return binary.BigEndian.AppendUint32(dst, d.CRC)
}

// AppendData appends a complete Data frame (d.CRC is written as given).
func AppendData(dst []byte, d Data) []byte {
	dst = AppendDataHeader(dst, d, len(d.Records))
	return append(dst, d.Records...)
}

// AppendHeartbeat appends a complete Heartbeat frame.
func AppendHeartbeat(dst []byte, h Heartbeat) []byte {
	dst, s := beginFrame(dst, FrameHeartbeat)
	dst = appendI64(dst, h.Epoch)
	dst = appendI64(dst, h.MasterMax)
	dst = appendI64(dst, h.Confirmed)
	dst = appendI64(dst, h.NextOffset)
	return endFrame(dst, s)
}

// AppendAck appends a complete Ack frame.
func AppendAck(dst []byte, a Ack) []byte {
	dst, s := beginFrame(dst, FrameAck)
	dst = appendI64(dst, a.Written)
	dst = appendI64(dst, a.Flushed)
	return endFrame(dst, s)
}

// AppendError appends a complete Error frame.
func AppendError(dst []byte, e ErrorFrame) []byte {
	dst, s := beginFrame(dst, FrameError)
	dst = appendErrorBody(dst, e)
	return endFrame(dst, s)
}

// appendErrorBody appends the Error body; the master's proof is computed
// over this body (trailer included) with an empty proof.
func appendErrorBody(dst []byte, e ErrorFrame) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(e.Code))
	dst = appendI64(dst, e.Offset)
	dst = appendStr(dst, e.Message)
	if !e.Extended {
		return dst
	}
	dst = appendI64(dst, e.MasterEpoch)
	dst = appendI64(dst, e.MasterMin)
	dst = appendI64(dst, e.MasterMax)
	return appendProof(dst, e.Proof)
}

// ---------------------------------------------------------------- decoding

// decoder reads big-endian fields with a sticky error: after the first short
// read every method returns zero values and err stays set, so callers check
// err once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = ErrShortFrame
		d.b = nil
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if b := d.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) i64() int64 {
	if b := d.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// off reads an offset, which must not be negative.
func (d *decoder) off() int64 {
	v := d.i64()
	if v < 0 && d.err == nil {
		d.err = fmt.Errorf("%w: negative offset %d", ErrBadFrame, v)
	}
	return v
}

func (d *decoder) str() string { return string(d.take(int(d.u16()))) }

// proof reads a u8 length and that many bytes (nil when empty), copied.
func (d *decoder) proof() []byte {
	if p := d.take(int(d.u8())); len(p) > 0 {
		return append([]byte(nil), p...)
	}
	return nil
}

func (d *decoder) magic() {
	if m := d.u32(); d.err == nil && m != Magic {
		d.err = ErrBadMagic
	}
}

// Trailing bytes are ignored: a later minor revision of a version may append
// fields to a frame (see the package doc).

// DecodeHello decodes a Hello body (the bytes after the type byte).
func DecodeHello(body []byte) (Hello, error) {
	d := decoder{b: body}
	var h Hello
	d.magic()
	h.MinVersion = d.u16()
	h.MaxVersion = d.u16()
	copy(h.Nonce[:], d.take(NonceLen))
	if d.err == nil && h.MinVersion > h.MaxVersion {
		d.err = fmt.Errorf("%w: version range %d..%d", ErrBadFrame, h.MinVersion, h.MaxVersion)
	}
	return h, d.err
}

// DecodeHandshake decodes a Handshake body.
func DecodeHandshake(body []byte) (Handshake, error) {
	d := decoder{b: body}
	var h Handshake
	d.magic()
	h.Version = d.u16()
	h.Flags = d.u16()
	h.Cluster = d.str()
	h.BrokerName = d.str()
	h.BrokerID = d.i64()
	h.MinOffset = d.off()
	h.MaxOffset = d.off()
	h.SegmentSize = d.off()
	h.LastEpoch = d.off()
	h.LastEpochStart = d.off()
	if h.Version >= Version2 {
		copy(h.SlaveNonce[:], d.take(NonceLen))
	}
	h.Proof = d.proof()
	if d.err == nil && h.MinOffset > h.MaxOffset {
		d.err = fmt.Errorf("%w: min offset %d > max offset %d", ErrBadFrame, h.MinOffset, h.MaxOffset)
	}
	return h, d.err
}

// DecodeAccept decodes an Accept body.
func DecodeAccept(body []byte) (Accept, error) {
	d := decoder{b: body}
	var a Accept
	a.Epoch = d.off()
	a.StartOffset = d.off()
	a.MasterMin = d.off()
	a.MasterMax = d.off()
	a.Confirmed = d.off()
	n := d.u32()
	if d.err == nil && (n > MaxEpochEntries || int(n)*16 > len(d.b)) {
		d.err = fmt.Errorf("%w: %d epoch entries", ErrBadFrame, n)
	}
	if d.err == nil && n > 0 {
		a.Epochs = make([]EpochEntry, n)
		for i := range a.Epochs {
			a.Epochs[i] = EpochEntry{Epoch: d.off(), StartOffset: d.off()}
		}
	}
	a.Proof = d.proof()
	return a, d.err
}

// DecodeData decodes a Data body. Records aliases body. The CRC is not
// checked here (see Data.Verify) so that a fuzzer can round-trip any frame.
func DecodeData(body []byte) (Data, error) {
	d := decoder{b: body}
	var v Data
	v.Epoch = d.off()
	v.StartOffset = d.off()
	v.MasterMax = d.off()
	v.Confirmed = d.off()
	v.CRC = d.u32()
	if d.err == nil {
		v.Records = d.b
	}
	return v, d.err
}

// Verify checks the CRC and that Records are whole CommitLog records that do
// not cross a segment end (segmentSize ≤ 0 skips the segment checks).
func (v Data) Verify(segmentSize int64) error {
	if BatchCRC(v.Records) != v.CRC {
		return ErrBadCRC
	}
	return CheckRecords(v.StartOffset, v.Records, segmentSize)
}

// DecodeHeartbeat decodes a Heartbeat body.
func DecodeHeartbeat(body []byte) (Heartbeat, error) {
	d := decoder{b: body}
	var h Heartbeat
	h.Epoch = d.off()
	h.MasterMax = d.off()
	h.Confirmed = d.off()
	h.NextOffset = d.off()
	return h, d.err
}

// DecodeAck decodes an Ack body.
func DecodeAck(body []byte) (Ack, error) {
	d := decoder{b: body}
	var a Ack
	a.Written = d.off()
	a.Flushed = d.off()
	return a, d.err
}

// DecodeError decodes an Error body.
func DecodeError(body []byte) (ErrorFrame, error) {
	d := decoder{b: body}
	var e ErrorFrame
	e.Code = ErrorCode(d.u16())
	e.Offset = d.i64()
	e.Message = d.str()
	if d.err == nil && len(d.b) > 0 {
		e.Extended = true
		e.MasterEpoch = d.off()
		e.MasterMin = d.off()
		e.MasterMax = d.off()
		e.Proof = d.proof()
	}
	return e, d.err
}

// SplitFrame splits one complete frame held in b into its type and body and
// returns the bytes after it. It does not check the frame-size limits.
func SplitFrame(b []byte) (t FrameType, body, rest []byte, err error) {
	if len(b) < FrameHeaderLen {
		return 0, nil, b, ErrShortFrame
	}
	n := binary.BigEndian.Uint32(b)
	if n < 1 {
		return 0, nil, b, fmt.Errorf("%w: zero length", ErrBadFrame)
	}
	if uint64(n) > uint64(len(b)-4) {
		return 0, nil, b, ErrShortFrame
	}
	end := 4 + int(n)
	return FrameType(b[4]), b[5:end:end], b[end:], nil
}
