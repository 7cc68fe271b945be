package runs

import (
	"encoding/json"
	"testing"
	"time"

	"bothy.dev/bothy/app/kernel"
)

func TestPreparedInvocation(t *testing.T) {
	t.Run("the delivered agent.invocation is the logged payload with the token, byte for byte as a merged object encodes", func(t *testing.T) {
		inv := Invocation{RunID: kernel.NewID(), AgentID: kernel.NewID(), ThreadID: kernel.NewID(), ChannelID: kernel.NewID(),
			SpaceID: kernel.NewID(), MessageID: kernel.NewID(), InvokedBy: kernel.NewID()}
		tok := InvocationToken{Token: "a.b<c>&d", ExpiresAt: time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)}
		logged, err := EvAgentInvocation.Encode(inv)
		if err != nil {
			t.Fatal(err)
		}
		var merged map[string]any
		if err := json.Unmarshal(logged, &merged); err != nil {
			t.Fatal(err)
		}
		merged["invocation_token"], merged["expires_at"] = tok.Token, tok.ExpiresAt
		want, _ := json.Marshal(merged)
		got, err := json.Marshal(prepared(inv, tok))
		if err != nil || string(got) != string(want) {
			t.Fatalf("got %s, want %s (%v)", got, want, err)
		}
	})
}
