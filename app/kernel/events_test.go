package kernel_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"bothy.dev/bothy/app/kernel"
)

type notePayload struct {
	ID   kernel.ID `json:"id"`
	Text string    `json:"text"`
}

var (
	evNoteAdded   = kernel.DefineEvent[notePayload]("note.added")
	evNoteEdited  = kernel.DefineEvent[notePayload]("note.edited")
	evNoteRemoved = kernel.DefineEvent[notePayload]("note.removed", kernel.RedactsEarlier("note.added", "note.edited"))
	evNoteTyping  = kernel.DefineEphemeral[notePayload]("note.typing")
)

func TestEventType(t *testing.T) {
	t.Run("Event fills the type and the payload and keeps the rest", func(t *testing.T) {
		e := evNoteAdded.Event(kernel.Event{SubjectID: "n1", ActorID: "a1"}, notePayload{ID: "n1", Text: "hi"})
		if e.Type != "note.added" || e.SubjectID != "n1" || e.ActorID != "a1" || e.Payload != (notePayload{ID: "n1", Text: "hi"}) {
			t.Fatalf("%+v", e)
		}
		if err := kernel.CheckEvent(e); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a payload encoded reads back equal", func(t *testing.T) {
		b, err := evNoteAdded.Encode(notePayload{ID: "n1", Text: "hi"})
		if err != nil || string(b) != `{"id":"n1","text":"hi"}` {
			t.Fatalf("%s %v", b, err)
		}
		p, err := evNoteAdded.Decode(kernel.LoggedEvent{Seq: 3, Type: "note.added", Payload: b})
		if err != nil || p != (notePayload{ID: "n1", Text: "hi"}) {
			t.Fatalf("%+v %v", p, err)
		}
	})

	t.Run("a payload that does not read, or an event of another type, is a PayloadError with the seq and the type", func(t *testing.T) {
		for _, e := range []kernel.LoggedEvent{
			{Seq: 4, Type: "note.added", Payload: []byte(`{"text":5}`)},
			{Seq: 4, Type: "note.added", Payload: []byte(`not json`)},
			{Seq: 4, Type: "note.edited", Payload: []byte(`{}`)},
		} {
			_, err := evNoteAdded.Decode(e)
			var pe *kernel.PayloadError
			if !errors.As(err, &pe) || pe.Seq != 4 || pe.Type != e.Type || !strings.Contains(err.Error(), "event 4 ("+e.Type+")") {
				t.Errorf("%s %s: %v", e.Type, e.Payload, err)
			}
		}
	})

	t.Run("DecodeOneOf reads through the type the event is of, and refuses one of none", func(t *testing.T) {
		p, err := kernel.DecodeOneOf(kernel.LoggedEvent{Type: "note.edited", Payload: []byte(`{"id":"n2"}`)}, evNoteAdded, evNoteEdited)
		if err != nil || p.ID != "n2" {
			t.Fatalf("%+v %v", p, err)
		}
		if _, err := kernel.DecodeOneOf(kernel.LoggedEvent{Seq: 9, Type: "note.removed", Payload: []byte(`{}`)}, evNoteAdded, evNoteEdited); err == nil {
			t.Fatal("note.removed read as one of note.added, note.edited")
		}
	})

	t.Run("CheckEvent refuses an undefined type, an ephemeral one and a payload of another type", func(t *testing.T) {
		for _, e := range []kernel.Event{
			{Type: "note.unknown", Payload: notePayload{}},
			evNoteTyping.Event(kernel.Event{}, notePayload{}),
			{Type: "note.added", Payload: &notePayload{}},
			{Type: "note.added", Payload: map[string]string{"id": "n1"}},
			{Type: "note.added"},
		} {
			if err := kernel.CheckEvent(e); err == nil {
				t.Errorf("%s with %T passed", e.Type, e.Payload)
			}
		}
	})

	t.Run("the registry lists each type once with its payload type, durability and redactions", func(t *testing.T) {
		i, ok := kernel.LookupEvent("note.removed")
		if !ok || i.Payload.Name() != "notePayload" || !i.Durable || !slices.Equal(i.Redacts, []string{"note.added", "note.edited"}) {
			t.Fatalf("%+v %v", i, ok)
		}
		if !slices.Equal(kernel.Redacts("note.removed"), []string{"note.added", "note.edited"}) || kernel.Redacts("note.added") != nil {
			t.Fatal("Redacts does not follow the registry")
		}
		if i, _ := kernel.LookupEvent("note.typing"); i.Durable {
			t.Fatal("an ephemeral type is durable")
		}
		var names []string
		for _, i := range kernel.EventTypes() {
			names = append(names, i.Name)
		}
		if !slices.Equal(names, []string{"note.added", "note.edited", "note.removed", "note.typing"}) {
			t.Fatalf("EventTypes = %v", names)
		}
	})

	t.Run("a name defined twice panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		kernel.DefineEvent[string]("note.added")
	})
}

// An event handed over by this process's writer carries its payload as appended: Decode answers
// that value without reading the JSON, and reads the JSON of an event from the log.
func TestDecodeTakesTheAppendedValue(t *testing.T) {
	appended := notePayload{Text: "as appended"}
	e := kernel.LoggedEvent{Seq: 1, Type: evNoteAdded.Name, Payload: []byte(`{"text":"as stored"}`), Value: appended}
	if got, err := evNoteAdded.Decode(e); err != nil || got != appended {
		t.Fatalf("Decode = %+v, %v; want the appended value", got, err)
	}
	e.Value = nil
	if got, err := evNoteAdded.Decode(e); err != nil || got.Text != "as stored" {
		t.Fatalf("Decode from the log = %+v, %v; want the stored JSON", got, err)
	}
	e.Value = "a value of another type"
	if got, err := evNoteAdded.Decode(e); err != nil || got.Text != "as stored" {
		t.Fatalf("Decode with a value of another type = %+v, %v; want the stored JSON", got, err)
	}
}
