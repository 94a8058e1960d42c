package hawire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// Domain separation: each proof starts with its own string, so a proof made
// for one purpose never verifies for another (a slave's proof is never a
// master's, a version-2 proof is never a version-1 one) and no other use of
// the same secret can produce either.
const (
	slaveProofDomain  = "rmqha/hawire v2 slave handshake proof\x00"
	masterProofDomain = "rmqha/hawire v2 master verdict proof\x00"
)

// SlaveProof is the slave's proof in a version-2 Handshake:
//
//	HMAC-SHA256(secret, slave domain ‖ master nonce ‖ slave nonce ‖
//	            handshake body with an empty proof)
//
// The body holds the slave's identity (cluster, broker, brokerId), its log
// bounds, segment size and last epoch, and its nonce, so none of them can
// be changed without breaking the proof, and the master's fresh nonce makes a
// recorded handshake worthless on another connection.
func SlaveProof(secret string, masterNonce [NonceLen]byte, h Handshake) []byte {
	h.Proof = nil
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(slaveProofDomain))
	mac.Write(masterNonce[:])
	mac.Write(h.SlaveNonce[:])
	mac.Write(appendHandshakeBody(nil, h))
	return mac.Sum(nil)
}

// VerifySlaveProof checks h.Proof in constant time.
func VerifySlaveProof(secret string, masterNonce [NonceLen]byte, h Handshake) bool {
	return len(h.Proof) == ProofLen && hmac.Equal(h.Proof, SlaveProof(secret, masterNonce, h))
}

// masterMAC starts the master's proof over one verdict:
//
//	HMAC-SHA256(secret, master domain ‖ master nonce ‖ slave nonce ‖
//	            str16 cluster ‖ str16 broker ‖ i64 brokerId ‖
//	            u8 len ‖ the slave's proof as received ‖
//	            u8 verdict frame type ‖ verdict body with an empty proof)
//
// Both nonces bind it to one connection, the identity and the slave's proof
// to the handshake it answers, the frame type to ACCEPT or ERROR.
func masterMAC(secret string, masterNonce [NonceLen]byte, h Handshake, verdict FrameType) hash.Hash {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(masterProofDomain))
	mac.Write(masterNonce[:])
	mac.Write(h.SlaveNonce[:])
	var b []byte
	b = appendStr(b, h.Cluster)
	b = appendStr(b, h.BrokerName)
	b = binary.BigEndian.AppendUint64(b, uint64(h.BrokerID))
	b = appendProof(b, h.Proof)
	b = append(b, byte(verdict))
	mac.Write(b)
	return mac
}

// AcceptProof is the master's proof in an Accept answering h: masterMAC over
// the Accept body (epoch, start, master min and max, confirmed, epoch list).
func AcceptProof(secret string, masterNonce [NonceLen]byte, h Handshake, a Accept) []byte {
	a.Proof = nil
	mac := masterMAC(secret, masterNonce, h, FrameAccept)
	mac.Write(appendAcceptBody(nil, a))
	return mac.Sum(nil)
}

// VerifyAcceptProof checks a.Proof in constant time.
func VerifyAcceptProof(secret string, masterNonce [NonceLen]byte, h Handshake, a Accept) bool {
	return len(a.Proof) == ProofLen && hmac.Equal(a.Proof, AcceptProof(secret, masterNonce, h, a))
}

// ErrorProof is the master's proof in an Error frame answering h: masterMAC
// over the Error body with its trailer (code, offset, message, master epoch,
// min and max).
func ErrorProof(secret string, masterNonce [NonceLen]byte, h Handshake, e ErrorFrame) []byte {
	e.Proof, e.Extended = nil, true
	mac := masterMAC(secret, masterNonce, h, FrameError)
	mac.Write(appendErrorBody(nil, e))
	return mac.Sum(nil)
}

// VerifyErrorProof checks e.Proof in constant time; a frame without the
// trailer never verifies.
func VerifyErrorProof(secret string, masterNonce [NonceLen]byte, h Handshake, e ErrorFrame) bool {
	return e.Extended && len(e.Proof) == ProofLen && hmac.Equal(e.Proof, ErrorProof(secret, masterNonce, h, e))
}
