package push

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"testing"
)

// The example of RFC 8291, Appendix A: the browser's keys, the sender's key pair and salt, and
// the body they make of "When I grow up, I want to be a watermelon".
const (
	rfcPlaintext = "When I grow up, I want to be a watermelon"
	rfcUAPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
	rfcUAPublic  = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	rfcASPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
	rfcASPublic  = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
	rfcSalt      = "DGv6ra1nlYgDCS1FRnbzlw"
	rfcAuth      = "BTBZMqHH6r4Tts7J_aSIgg"
	rfcBody      = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
)

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncryption(t *testing.T) {
	t.Run("the RFC 8291 example encrypts to the RFC's body", func(t *testing.T) {
		as, err := ecdh.P256().NewPrivateKey(b64(t, rfcASPrivate))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(as.PublicKey().Bytes(), b64(t, rfcASPublic)) {
			t.Fatal("the sender's public key is not the RFC's")
		}
		got, err := encryptWith([]byte(rfcPlaintext), b64(t, rfcUAPublic), b64(t, rfcAuth), as, b64(t, rfcSalt))
		if err != nil {
			t.Fatal(err)
		}
		if want := b64(t, rfcBody); !bytes.Equal(got, want) {
			t.Fatalf("body\n got %s\nwant %s", base64.RawURLEncoding.EncodeToString(got), rfcBody)
		}
	})
	t.Run("the RFC's body decrypts with the browser's keys", func(t *testing.T) {
		ua, err := ecdh.P256().NewPrivateKey(b64(t, rfcUAPrivate))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decrypt(b64(t, rfcBody), ua, b64(t, rfcAuth))
		if err != nil || string(got) != rfcPlaintext {
			t.Fatalf("decrypt = %q, %v", got, err)
		}
	})
	t.Run("a message encrypts with a fresh key and salt each time and decrypts", func(t *testing.T) {
		ua, _ := ecdh.P256().GenerateKey(rand.Reader)
		auth := make([]byte, 16)
		rand.Read(auth)
		a, err := Encrypt([]byte(`{"message_id":"x"}`), ua.PublicKey().Bytes(), auth)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Encrypt([]byte(`{"message_id":"x"}`), ua.PublicKey().Bytes(), auth)
		if bytes.Equal(a[:86], b[:86]) {
			t.Fatal("two messages share salt and key")
		}
		got, err := Decrypt(a, ua, auth)
		if err != nil || string(got) != `{"message_id":"x"}` {
			t.Fatalf("decrypt = %q, %v", got, err)
		}
	})
	t.Run("a changed byte, another auth secret or another key does not decrypt", func(t *testing.T) {
		ua, _ := ecdh.P256().NewPrivateKey(b64(t, rfcUAPrivate))
		body := b64(t, rfcBody)
		body[len(body)-1] ^= 1
		if _, err := Decrypt(body, ua, b64(t, rfcAuth)); err == nil {
			t.Fatal("a changed body decrypted")
		}
		if _, err := Decrypt(b64(t, rfcBody), ua, make([]byte, 16)); err == nil {
			t.Fatal("another auth secret decrypted")
		}
		other, _ := ecdh.P256().GenerateKey(rand.Reader)
		if _, err := Decrypt(b64(t, rfcBody), other, b64(t, rfcAuth)); err == nil {
			t.Fatal("another key decrypted")
		}
		if _, err := Decrypt(body[:40], ua, b64(t, rfcAuth)); err == nil {
			t.Fatal("a short body decrypted")
		}
	})
	t.Run("a payload too large for one record is refused", func(t *testing.T) {
		ua, _ := ecdh.P256().GenerateKey(rand.Reader)
		if _, err := Encrypt(make([]byte, MaxPlaintextBytes+1), ua.PublicKey().Bytes(), make([]byte, 16)); err == nil {
			t.Fatal("encrypted")
		}
	})
}
