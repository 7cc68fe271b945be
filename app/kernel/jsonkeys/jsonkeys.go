// Package jsonkeys holds the exact-key rule of every JSON document a client sends: a member
// binds to a struct field only when its key is the field's JSON name byte for byte.
//
// encoding/json matches keys case-insensitively, so {"name":"a","NAME":"b"} slips past a
// duplicate-key guard and sets the name to "b", and {"Name":…} is accepted where a document
// names only "name". Exact walks a document next to the Go type it will be decoded into and
// refuses such near-matches before encoding/json sees them; what to do with keys that match no
// field at all stays the caller's choice (the REST API refuses them, the gateway ignores them).
//
// It must not import anything of the project or a third-party module.
package jsonkeys

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
)

// MismatchError is a key that differs from a field's JSON name only in case.
type MismatchError struct {
	// Path is the dotted path of the key: the names of the enclosing members and the key
	// itself, as the client spelled it ("steps.ID").
	Path string
	// Key is the key as sent; Member is the field's JSON name it folds to.
	Key, Member string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("jsonkeys: key %q is not %q: keys must match exactly", e.Path, e.Member)
}

// DuplicateError is a struct field's key given twice in one object: encoding/json would keep
// the last, a reader of the first would see another document.
type DuplicateError struct {
	Path string // the dotted path of the key
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("jsonkeys: key %q is given twice", e.Path)
}

// ErrSyntax is returned for a document that is not JSON.
var ErrSyntax = errors.New("jsonkeys: not JSON")

// Exact checks data against the type of v (a pointer, as for json.Unmarshal): every object
// member whose key equals a field's JSON name under case folding must equal it exactly, and
// no field's key may come twice in one object. Errors: *MismatchError, *DuplicateError,
// ErrSyntax.
func Exact(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return walk(dec, reflect.TypeOf(v), "")
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walk reads one value from dec and checks it against t (nil: anything goes).
func walk(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		if implementsUnmarshal(t) {
			t = nil
			break
		}
		t = t.Elem()
	}
	if t != nil && implementsUnmarshal(t) {
		t = nil // the type reads its own JSON
	}
	tok, err := dec.Token()
	if err != nil {
		return ErrSyntax
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar has no keys
	}
	switch d {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walk(dec, elem, path); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]fieldInfo
		var elem reflect.Type
		if t != nil {
			switch t.Kind() {
			case reflect.Struct:
				fields = fieldsOf(t)
			case reflect.Map:
				elem = t.Elem()
			}
		}
		var seen map[string]bool
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return ErrSyntax
			}
			key, _ := tok.(string)
			child := join(path, key)
			next := elem
			if fields != nil {
				next = nil
				if f, ok := fields[key]; ok {
					if seen[key] {
						return &DuplicateError{Path: child}
					}
					if seen == nil {
						seen = map[string]bool{}
					}
					seen[key] = true
					next = f.typ
				} else {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return &MismatchError{Path: child, Key: key, Member: name}
						}
					}
				}
			}
			if err := walk(dec, next, child); err != nil {
				return err
			}
		}
	default:
		return ErrSyntax
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return ErrSyntax
	}
	return nil
}

func implementsUnmarshal(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || pt.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

type fieldInfo struct {
	typ   reflect.Type
	depth int
}

var cache sync.Map // reflect.Type → map[string]fieldInfo

// fieldsOf returns the JSON names of a struct's fields as encoding/json sees them: exported
// fields by tag or Go name, "-" left out, untagged embedded structs promoted (the shallower
// field wins a name).
func fieldsOf(t reflect.Type) map[string]fieldInfo {
	if m, ok := cache.Load(t); ok {
		return m.(map[string]fieldInfo)
	}
	m := map[string]fieldInfo{}
	collect(t, 0, m, map[reflect.Type]bool{})
	cache.Store(t, m)
	return m
}

func collect(t reflect.Type, depth int, m map[string]fieldInfo, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collect(ft, depth+1, m, seen)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if old, ok := m[name]; ok && old.depth <= depth {
			continue
		}
		m[name] = fieldInfo{typ: f.Type, depth: depth}
	}
}
