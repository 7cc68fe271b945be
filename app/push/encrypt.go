package push

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// The message encryption of Web Push (RFC 8291) in the aes128gcm content coding (RFC 8188):
// the browser's subscription holds a P-256 public key (p256dh) and a 16-byte secret (auth); the
// sender makes a key pair of its own for each message, derives the content key from the ECDH
// secret, the auth secret and a random salt, and sends one record whose header carries the salt
// and its public key. The push service in between sees only the ciphertext.

const (
	saltBytes = 16
	// AuthSecretBytes is the length of a subscription's auth secret.
	AuthSecretBytes = 16
	// PublicKeyBytes is the length of an uncompressed P-256 point.
	PublicKeyBytes = 65
	// recordSize is the rs of the one record: large enough for any payload bothy sends (the
	// push services take at most 4096 bytes of body).
	recordSize  = 4096
	headerBytes = saltBytes + 4 + 1 + PublicKeyBytes
	tagBytes    = 16
	// MaxPlaintextBytes is the largest payload Encrypt takes: the body stays within the 4096
	// bytes every push service accepts.
	MaxPlaintextBytes = recordSize - headerBytes - tagBytes - 1
)

var errDecrypt = errors.New("push: the body does not decrypt")

// Encrypt encrypts plaintext for the subscription keys uaPublic (65 bytes) and auth (16 bytes)
// and returns the body of the push request.
func Encrypt(plaintext, uaPublic, auth []byte) ([]byte, error) {
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("push: make the message's key: %w", err)
	}
	salt := make([]byte, saltBytes)
	rand.Read(salt)
	return encryptWith(plaintext, uaPublic, auth, as, salt)
}

// encryptWith is Encrypt with the sender's key pair and the salt given, for the test vector.
func encryptWith(plaintext, uaPublic, auth []byte, as *ecdh.PrivateKey, salt []byte) ([]byte, error) {
	if len(plaintext) > MaxPlaintextBytes {
		return nil, fmt.Errorf("push: a payload of %d bytes is more than %d", len(plaintext), MaxPlaintextBytes)
	}
	if len(auth) != AuthSecretBytes {
		return nil, fmt.Errorf("push: the auth secret is %d bytes, not %d", len(auth), AuthSecretBytes)
	}
	ua, err := ecdh.P256().NewPublicKey(uaPublic)
	if err != nil {
		return nil, fmt.Errorf("push: the subscription's public key: %w", err)
	}
	secret, err := as.ECDH(ua)
	if err != nil {
		return nil, fmt.Errorf("push: key agreement: %w", err)
	}
	asPublic := as.PublicKey().Bytes()
	gcm, nonce, err := contentKey(secret, auth, uaPublic, asPublic, salt)
	if err != nil {
		return nil, err
	}
	out := make([]byte, headerBytes, headerBytes+len(plaintext)+1+tagBytes)
	copy(out, salt)
	binary.BigEndian.PutUint32(out[saltBytes:], recordSize)
	out[saltBytes+4] = PublicKeyBytes
	copy(out[saltBytes+5:], asPublic)
	record := append(append(make([]byte, 0, len(plaintext)+1), plaintext...), 0x02) // the last record's delimiter, no padding
	return gcm.Seal(out, nonce, record, nil), nil
}

// contentKey derives the AES-128-GCM key and the nonce of the one record (RFC 8291 section 3.4,
// RFC 8188 section 2.2).
func contentKey(ecdhSecret, auth, uaPublic, asPublic, salt []byte) (cipher.AEAD, []byte, error) {
	// PRK_key = HMAC-SHA-256(auth_secret, ecdh_secret); IKM = HKDF-Expand(PRK_key, key_info, 32)
	mac := hmac.New(sha256.New, auth)
	mac.Write(ecdhSecret)
	keyInfo := "WebPush: info\x00" + string(uaPublic) + string(asPublic)
	ikm, err := hkdf.Expand(sha256.New, mac.Sum(nil), keyInfo, 32)
	if err != nil {
		return nil, nil, fmt.Errorf("push: derive the input key: %w", err)
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, nil, fmt.Errorf("push: derive the key: %w", err)
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, nil, fmt.Errorf("push: derive the content key: %w", err)
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, nil, fmt.Errorf("push: derive the nonce: %w", err)
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, nil, fmt.Errorf("push: %w", err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, nil, fmt.Errorf("push: %w", err)
	}
	return gcm, nonce, nil
}

// Decrypt is the browser's side of Encrypt: it decrypts body with the subscription's private
// key and auth secret. It takes one record, as Encrypt writes, and strips the padding. The fake
// push service of the tests reads the payloads with it.
func Decrypt(body []byte, ua *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < headerBytes+tagBytes+1 {
		return nil, errDecrypt
	}
	salt := body[:saltBytes]
	rs := binary.BigEndian.Uint32(body[saltBytes:])
	idLen := int(body[saltBytes+4])
	if idLen != PublicKeyBytes || rs < 18 || len(body)-headerBytes > int(rs) {
		return nil, errDecrypt
	}
	asPublic := body[saltBytes+5 : headerBytes]
	as, err := ecdh.P256().NewPublicKey(asPublic)
	if err != nil {
		return nil, errDecrypt
	}
	secret, err := ua.ECDH(as)
	if err != nil {
		return nil, errDecrypt
	}
	gcm, nonce, err := contentKey(secret, auth, ua.PublicKey().Bytes(), asPublic, salt)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, body[headerBytes:], nil)
	if err != nil {
		return nil, errDecrypt
	}
	// Padding is zeros after the delimiter; the last record's delimiter is 2.
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 0x02 {
		return nil, errDecrypt
	}
	return plain[:i], nil
}
