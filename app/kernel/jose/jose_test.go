package jose

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type testClaims struct {
	Sub   string `json:"sub"`
	RunID string `json:"run_id"`
	Exp   int64  `json:"exp"`
}

// Fixed seeds keep the tokens, and so the failures, the same from run to run.
var (
	key1 = ed25519.NewKeyFromSeed([]byte(strings.Repeat("1", ed25519.SeedSize)))
	key2 = ed25519.NewKeyFromSeed([]byte(strings.Repeat("2", ed25519.SeedSize)))
)

func keys(kid string) (ed25519.PublicKey, bool) {
	switch kid {
	case "k1":
		return key1.Public().(ed25519.PublicKey), true
	case "k2":
		return key2.Public().(ed25519.PublicKey), true
	case "short":
		return ed25519.PublicKey{1, 2, 3}, true
	}
	return nil, false
}

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// mustSignRaw signs arbitrary header and payload bytes, which Sign would never write, to reach
// the checks that run after the signature.
func mustSignRaw(tb testing.TB, key ed25519.PrivateKey, header, payload string) string {
	tb.Helper()
	in := enc([]byte(header)) + "." + enc([]byte(payload))
	return in + "." + enc(ed25519.Sign(key, []byte(in)))
}

func mustSign(tb testing.TB, key ed25519.PrivateKey, kid string, claims any) string {
	tb.Helper()
	tok, err := Sign(key, kid, claims)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

var good = testClaims{Sub: "agent", RunID: "run-1", Exp: 1700000000}

const goodPayload = `{"sub":"agent","run_id":"run-1","exp":1700000000}`

func TestSign(t *testing.T) {
	t.Run("writes the header alg, typ, kid in that order", func(t *testing.T) {
		tok := mustSign(t, key1, "k1", good)
		h, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
		if string(h) != `{"alg":"EdDSA","typ":"JWT","kid":"k1"}` {
			t.Fatalf("header %s", h)
		}
	})
	t.Run("is deterministic, as Ed25519 is", func(t *testing.T) {
		if mustSign(t, key1, "k1", good) != mustSign(t, key1, "k1", good) {
			t.Fatal("two tokens for the same input")
		}
	})
	for _, tt := range []struct {
		name   string
		key    ed25519.PrivateKey
		kid    string
		claims any
	}{
		{"refuses a short key", key1[:32], "k1", good},
		{"refuses an empty key id", key1, "", good},
		{"refuses claims that are not an object", key1, "k1", []string{"a"}},
		{"refuses claims that are a string", key1, "k1", "a"},
		{"refuses claims that do not marshal", key1, "k1", map[string]any{"c": make(chan int)}},
		{"refuses claims that would make a token over the bound", key1, "k1", map[string]string{"x": strings.Repeat("a", MaxTokenBytes)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tok, err := Sign(tt.key, tt.kid, tt.claims); err == nil {
				t.Fatalf("signed %q", tok)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	valid := mustSign(t, key1, "k1", good)
	parts := strings.Split(valid, ".")
	withSegment := func(i int, s string) string {
		p := append([]string(nil), parts...)
		p[i] = s
		return strings.Join(p, ".")
	}
	hmacToken := func() string {
		in := enc([]byte(`{"alg":"HS256","typ":"JWT","kid":"k1"}`)) + "." + enc([]byte(goodPayload))
		m := hmac.New(sha256.New, key1.Public().(ed25519.PublicKey))
		m.Write([]byte(in))
		return in + "." + enc(m.Sum(nil))
	}
	lastCharFlipped := func(s string) string {
		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		v := strings.IndexByte(alphabet, s[len(s)-1])
		return s[:len(s)-1] + string(alphabet[v|1]) // a set low bit is beyond the 512 bits
	}

	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"accepts a token it signed", valid, nil},
		{"accepts a header without typ", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}`, goodPayload), nil},
		{"accepts unknown claims and white space", mustSignRaw(t, key1, `{ "alg" : "EdDSA", "kid":"k1" }`, ` {"sub":"agent","run_id":"run-1","exp":1700000000,"x":[1,{"y":2}]} `), nil},
		{"accepts an escaped algorithm name, which is the same name", mustSignRaw(t, key1, `{"alg":"Ed\u0044SA","kid":"k1"}`, goodPayload), nil},

		{"refuses a tampered payload", withSegment(1, enc([]byte(`{"sub":"agent","run_id":"run-2","exp":1700000000}`))), ErrSignature},
		{"refuses a tampered header", withSegment(0, enc([]byte(`{"alg":"EdDSA","typ":"JWT","kid":"k1","x":1}`))), ErrSignature},
		{"refuses a swapped kid naming another known key", withSegment(0, enc([]byte(`{"alg":"EdDSA","typ":"JWT","kid":"k2"}`))), ErrSignature},
		{"refuses a signature by another key under the same kid", mustSign(t, key2, "k1", good), ErrSignature},
		{"refuses the signature of another token", withSegment(2, strings.Split(mustSign(t, key1, "k1", testClaims{Sub: "x"}), ".")[2]), ErrSignature},
		{"refuses a truncated signature", withSegment(2, enc(make([]byte, 63))), ErrSignature},
		{"refuses an unknown kid", mustSign(t, key1, "k9", good), ErrUnknownKey},
		{"refuses a known kid whose key has the wrong length", mustSign(t, key1, "short", good), ErrUnknownKey},

		{"refuses alg none without signature", enc([]byte(`{"alg":"none","typ":"JWT","kid":"k1"}`)) + "." + parts[1] + ".", ErrAlgorithm},
		{"refuses alg none with the valid signature", withSegment(0, enc([]byte(`{"alg":"none","typ":"JWT","kid":"k1"}`))), ErrAlgorithm},
		{"refuses alg None", mustSignRaw(t, key1, `{"alg":"None","kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses alg NONE", mustSignRaw(t, key1, `{"alg":"NONE","kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses alg eddsa", mustSignRaw(t, key1, `{"alg":"eddsa","kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses alg EDDSA", mustSignRaw(t, key1, `{"alg":"EDDSA","kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses alg Ed25519", mustSignRaw(t, key1, `{"alg":"Ed25519","kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses alg with a trailing space", mustSignRaw(t, key1, `{"alg":"EdDSA ","kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses alg ES256", mustSignRaw(t, key1, `{"alg":"ES256","kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses HS256 keyed with the public key", hmacToken(), ErrAlgorithm},
		{"refuses a missing alg", mustSignRaw(t, key1, `{"kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses a null alg", mustSignRaw(t, key1, `{"alg":null,"kid":"k1"}`, goodPayload), ErrAlgorithm},
		{"refuses an alg array", mustSignRaw(t, key1, `{"alg":["EdDSA"],"kid":"k1"}`, goodPayload), ErrAlgorithm},

		{"refuses the empty string", "", ErrMalformed},
		{"refuses two segments", parts[0] + "." + parts[1], ErrMalformed},
		{"refuses four segments", valid + "." + parts[2], ErrMalformed},
		{"refuses trailing data after the signature", valid + ".", ErrMalformed},
		{"refuses only dots", "..", ErrMalformed},
		{"refuses an empty payload", withSegment(1, ""), ErrMalformed},
		{"refuses an empty signature", withSegment(2, ""), ErrMalformed},
		{"refuses padding", withSegment(2, parts[2]+"=="), ErrMalformed},
		{"refuses padding in the header", withSegment(0, base64.URLEncoding.EncodeToString([]byte(`{"alg":"EdDSA","kid":"k1"}`))), ErrMalformed},
		{"refuses the standard alphabet", stdAlphabetToken(t), ErrMalformed},
		{"refuses a line break inside a segment", withSegment(2, parts[2][:10]+"\n"+parts[2][10:]), ErrMalformed},
		{"refuses a carriage return inside a segment", withSegment(1, parts[1][:4]+"\r"+parts[1][4:]), ErrMalformed},
		{"refuses a space", " " + valid, ErrMalformed},
		{"refuses non-canonical trailing bits", withSegment(2, lastCharFlipped(parts[2])), ErrMalformed},
		{"refuses a token over the bound", withSegment(1, strings.Repeat("A", MaxTokenBytes)), ErrMalformed},

		{"refuses a duplicate kid", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k2","kid":"k1"}`, goodPayload), ErrMalformed},
		{"refuses a duplicate alg hiding none", mustSignRaw(t, key1, `{"alg":"none","alg":"EdDSA","kid":"k1"}`, goodPayload), ErrMalformed},
		{"refuses a duplicate name spelt with an escape", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1","\u006bid":"k2"}`, goodPayload), ErrMalformed},
		{"refuses a header that is an array", mustSignRaw(t, key1, `["EdDSA"]`, goodPayload), ErrMalformed},
		{"refuses a header that is not JSON", mustSignRaw(t, key1, `alg=EdDSA`, goodPayload), ErrMalformed},
		{"refuses data after the header object", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}{}`, goodPayload), ErrMalformed},
		{"refuses a header in invalid UTF-8", mustSignRaw(t, key1, "{\"alg\":\"EdDSA\",\"kid\":\"k1\",\"x\":\"\xff\"}", goodPayload), ErrMalformed},
		{"refuses a missing kid", mustSignRaw(t, key1, `{"alg":"EdDSA"}`, goodPayload), ErrMalformed},
		{"refuses an empty kid", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":""}`, goodPayload), ErrMalformed},
		{"refuses a numeric kid", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":1}`, goodPayload), ErrMalformed},
		{"refuses crit", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1","crit":["exp"],"exp":1}`, goodPayload), ErrMalformed},
		{"refuses another typ", mustSignRaw(t, key1, `{"alg":"EdDSA","typ":"dpop+jwt","kid":"k1"}`, goodPayload), ErrMalformed},

		{"refuses claims that are an array", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}`, `[1]`), ErrMalformed},
		{"refuses claims with a duplicate member", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}`, `{"run_id":"run-2","run_id":"run-1"}`), ErrMalformed},
		{"refuses claims with a nested duplicate member", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}`, `{"x":[{"a":1,"a":2}]}`), ErrMalformed},
		{"refuses claims with data after them", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}`, goodPayload+`{}`), ErrMalformed},
		{"refuses claims with a trailing comma", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}`, `{"sub":"a",}`), ErrMalformed},
		{"refuses claims in invalid UTF-8", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}`, "{\"sub\":\"\xc3\"}"), ErrMalformed},
		{"refuses claims of the wrong type", mustSignRaw(t, key1, `{"alg":"EdDSA","kid":"k1"}`, `{"exp":"soon"}`), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got testClaims
			err := Verify(tt.token, keys, &got)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if got != good {
					t.Fatalf("claims %+v", got)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if got != (testClaims{}) {
				t.Fatalf("claims decoded from a refused token: %+v", got)
			}
		})
	}

	t.Run("skips decoding when claims is nil", func(t *testing.T) {
		if err := Verify(valid, keys, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("checks the algorithm before asking for the key", func(t *testing.T) {
		asked := false
		err := Verify(enc([]byte(`{"alg":"none","kid":"k1"}`))+"."+parts[1]+".", func(string) (ed25519.PublicKey, bool) {
			asked = true
			return nil, false
		}, nil)
		if !errors.Is(err, ErrAlgorithm) || asked {
			t.Fatalf("err = %v, asked = %v", err, asked)
		}
	})
}

// stdAlphabetToken returns a validly signed token whose header is written in the standard
// base64 alphabet, which differs from base64url in the characters + and /.
func stdAlphabetToken(tb testing.TB) string {
	tb.Helper()
	for i := 0; ; i++ {
		h := fmt.Sprintf(`{"alg":"EdDSA","kid":"k1","n":"%d??>"}`, i)
		std := base64.RawStdEncoding.EncodeToString([]byte(h))
		if std == enc([]byte(h)) {
			continue
		}
		in := std + "." + enc([]byte(goodPayload))
		return in + "." + enc(ed25519.Sign(key1, []byte(in)))
	}
}

// FuzzVerify holds that Verify never panics on any string and that every refusal names exactly
// one of the four reasons.
func FuzzVerify(f *testing.F) {
	valid := mustSign(f, key1, "k1", good)
	f.Add(valid)
	f.Add(mustSign(f, key1, "k9", good))
	f.Add(mustSign(f, key1, "short", good))
	f.Add(mustSignRaw(f, key1, `{"alg":"none","kid":"k1"}`, goodPayload))
	f.Add(mustSignRaw(f, key1, `{"alg":"EdDSA","kid":"k1","kid":"k1"}`, `{"a":[{"b":{}}]}`))
	f.Add("..")
	f.Add("a.b.c")
	f.Add(valid + "=")
	f.Fuzz(func(t *testing.T, token string) {
		var claims map[string]any
		err := Verify(token, keys, &claims)
		checkOneReason(t, err)
	})
}

// FuzzVerifySigned signs whatever header and payload the fuzzer makes, so that the checks after
// the signature see hostile input too. What Verify accepts must be what a plain JSON parser reads.
func FuzzVerifySigned(f *testing.F) {
	f.Add([]byte(`{"alg":"EdDSA","kid":"k1"}`), []byte(goodPayload))
	f.Add([]byte(`{"alg":"EdDSA","typ":"JWT","kid":"k1"}`), []byte(`{"a":[1,{"b":[]}],"c":{"d":null}}`))
	f.Add([]byte(`{"alg":"EdDSA","kid":"k1","kid":"k2"}`), []byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"alg":"EdDSA","kid":"k1"}`), []byte(`{"a":"\ud800"}`))
	f.Add([]byte(`{"alg":"EdDSA","kid":"k1"}`), []byte(`[[[[[[`))
	f.Fuzz(func(t *testing.T, header, payload []byte) {
		in := enc(header) + "." + enc(payload)
		token := in + "." + enc(ed25519.Sign(key1, []byte(in)))
		var claims map[string]any
		err := Verify(token, keys, &claims)
		checkOneReason(t, err)
		if err != nil {
			return
		}
		var h map[string]any
		if json.Unmarshal(header, &h) != nil || h["alg"] != Algorithm || h["kid"] != "k1" {
			t.Fatalf("accepted header %q", header)
		}
		var c map[string]any
		if json.Unmarshal(payload, &c) != nil || c == nil {
			t.Fatalf("accepted payload %q", payload)
		}
	})
}

func checkOneReason(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	n := 0
	for _, reason := range []error{ErrMalformed, ErrAlgorithm, ErrUnknownKey, ErrSignature} {
		if errors.Is(err, reason) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("err %v wraps %d reasons", err, n)
	}
}
