package jsonkeys

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

type step struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

type base struct {
	Owner string `json:"owner"`
}

type doc struct {
	base
	Name     string            `json:"name"`
	Handle   string            `json:"handle,omitempty"`
	Plain    int               // no tag: its JSON name is "Plain"
	Hidden   string            `json:"-"`
	Steps    []step            `json:"steps"`
	Error    *step             `json:"error"`
	Labels   map[string]step   `json:"labels"`
	Any      any               `json:"any"`
	Raw      json.RawMessage   `json:"raw"`
	At       time.Time         `json:"at"`
	Extra    map[string]string `json:"extra"`
	internal string
}

func TestExact(t *testing.T) {
	var d doc
	accept := map[string]string{
		"exact keys":                         `{"name":"a","handle":"b","Plain":1,"owner":"o"}`,
		"keys that match no field at all":    `{"colour":"red","nested":{"NAME":1}}`,
		"keys of a map, whatever their case": `{"extra":{"NAME":"x","Name":"y"}}`,
		"keys inside a free-form value":      `{"any":{"NAME":1},"raw":{"Name":2}}`,
		"exact keys of nested structs":       `{"steps":[{"id":"1","title":"t"}],"error":{"id":"e"},"labels":{"k":{"title":"x"}}}`,
		"a value that reads its own JSON":    `{"at":"2026-03-01T12:00:00Z"}`,
		"scalars, arrays and null in place":  `{"steps":null,"error":null,"name":"x"}`,
		"a key of a field left out with a -": `{"Hidden":"x"}`,
		"a key like an unexported field's":   `{"INTERNAL":"x"}`,
	}
	for name, body := range accept {
		t.Run("accepts "+name, func(t *testing.T) {
			if err := Exact([]byte(body), &d); err != nil {
				t.Fatalf("%s: %v", body, err)
			}
		})
	}

	refuse := map[string]struct{ body, path, member string }{
		"a key in upper case":                 {`{"name":"a","NAME":"b"}`, "NAME", "name"},
		"a capitalised key":                   {`{"Name":"a"}`, "Name", "name"},
		"a key of a field without a tag":      {`{"plain":1}`, "plain", "Plain"},
		"a key of a promoted field":           {`{"OWNER":"o"}`, "OWNER", "owner"},
		"a key in a struct inside an array":   {`{"steps":[{"id":"1"},{"ID":"2"}]}`, "steps.ID", "id"},
		"a key in a struct behind a pointer":  {`{"error":{"Title":"x"}}`, "error.Title", "title"},
		"a key in a struct that a map holds":  {`{"labels":{"k":{"TITLE":"x"}}}`, "labels.k.TITLE", "title"},
		"a near-match after an unknown key":   {`{"colour":"red","HANDLE":"carol"}`, "HANDLE", "handle"},
		"a near-match of a field with a flag": {`{"Handle":"x"}`, "Handle", "handle"},
	}
	for name, c := range refuse {
		t.Run("refuses "+name, func(t *testing.T) {
			err := Exact([]byte(c.body), &d)
			var me *MismatchError
			if !errors.As(err, &me) || me.Path != c.path || me.Member != c.member {
				t.Fatalf("%s: %v, want the mismatch %s → %s", c.body, err, c.path, c.member)
			}
		})
	}

	t.Run("refuses a key that folds to a field's name through a Unicode case pair", func(t *testing.T) {
		type k struct {
			Kind string `json:"kind"`
		}
		// U+212A KELVIN SIGN folds to k: encoding/json would set Kind from it.
		var v k
		if err := json.Unmarshal([]byte("{\"\u212aind\":\"x\"}"), &v); err != nil || v.Kind != "x" {
			t.Skipf("encoding/json no longer folds the Kelvin sign (%v, %q)", err, v.Kind)
		}
		var me *MismatchError
		if err := Exact([]byte("{\"\u212aind\":\"x\"}"), &v); !errors.As(err, &me) || me.Member != "kind" {
			t.Fatalf("%v", err)
		}
	})

	t.Run("refuses a field's key given twice", func(t *testing.T) {
		var de *DuplicateError
		if err := Exact([]byte(`{"steps":[{"id":"1","id":"2"}]}`), &d); !errors.As(err, &de) || de.Path != "steps.id" {
			t.Fatalf("%v", err)
		}
	})

	t.Run("refuses a document that is not JSON", func(t *testing.T) {
		if err := Exact([]byte(`{"name":`), &d); !errors.Is(err, ErrSyntax) {
			t.Fatalf("%v", err)
		}
	})
}
