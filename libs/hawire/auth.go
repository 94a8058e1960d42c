package hawire

import (
	"crypto/hmac"
	"crypto/sha256"
)

// proofDomain separates these proofs from any other use of the secret.
const proofDomain = "rmqha/hawire handshake proof v1\x00"

// ComputeProof returns HMAC-SHA256(secret, domain ‖ nonce ‖ handshake body
// with an empty proof). The nonce is fresh for every connection, so a
// recorded handshake does not verify on another connection.
func ComputeProof(secret string, nonce [NonceLen]byte, h Handshake) []byte {
	h.Proof = nil
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(proofDomain))
	mac.Write(nonce[:])
	mac.Write(appendHandshakeBody(nil, h))
	return mac.Sum(nil)
}

// VerifyProof checks h.Proof in constant time.
func VerifyProof(secret string, nonce [NonceLen]byte, h Handshake) bool {
	return len(h.Proof) == ProofLen && hmac.Equal(h.Proof, ComputeProof(secret, nonce, h))
}
