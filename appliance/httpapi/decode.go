package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/kernel/jsonkeys"
)

// checkJSON is the JSON guard: invalid UTF-8, nesting deeper than maxDepth and
// duplicate object keys are refused before any decoding into types, so that a document two
// parsers would read differently never reaches a use case.
func checkJSON(body []byte, maxDepth int) error {
	if !utf8.Valid(body) {
		return kernel.Errorf(kernel.CodeMalformedRequest, "the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object bool
		keys   map[string]struct{}
		expect bool // in an object: the next token is a key
	}
	var stack []*frame
	values := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return kernel.Errorf(kernel.CodeMalformedRequest, "the body is not valid JSON")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expect {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			key, _ := tok.(string)
			if _, dup := top.keys[key]; dup {
				return kernel.Errorf(kernel.CodeMalformedRequest, "the body repeats the key %q", key)
			}
			top.keys[key] = struct{}{}
			top.expect = false
			continue
		}
		if top == nil {
			values++
			if values > 1 {
				return kernel.Errorf(kernel.CodeMalformedRequest, "the body holds more than one JSON value")
			}
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack)+1 > maxDepth {
				return kernel.Errorf(kernel.CodeMalformedRequest, "the body is nested deeper than %d levels", maxDepth)
			}
			if top != nil && top.object {
				top.expect = true
			}
			f := &frame{object: d == '{', expect: d == '{'}
			if f.object {
				f.keys = map[string]struct{}{}
			}
			stack = append(stack, f)
		case '}', ']':
			stack = stack[:len(stack)-1]
		default:
			if top != nil && top.object {
				top.expect = true
			}
		}
	}
	if values == 0 {
		return kernel.Errorf(kernel.CodeMalformedRequest, "the body is empty")
	}
	return nil
}

// decodeInto decodes a guarded body into v, refusing unknown fields and wrong types with an
// error that names the field. A key must be its member's name byte for byte: encoding/json
// alone would bind "NAME" or "Name" to the member "name", so a key that differs only in case
// is an unknown field too.
func decodeInto(body []byte, v any) error {
	var mismatch *jsonkeys.MismatchError
	if err := jsonkeys.Exact(body, v); errors.As(err, &mismatch) {
		return kernel.Invalid(mismatch.Path, "unknown field %s (the member is %s)", mismatch.Path, mismatch.Member)
	} else if err != nil { // checkJSON has refused duplicates and broken JSON already
		return kernel.Errorf(kernel.CodeMalformedRequest, "the body does not match the expected shape")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			field := te.Field
			if field == "" {
				return kernel.Errorf(kernel.CodeValidation, "the body must be a JSON object")
			}
			return kernel.Invalid(field, "%s must be of type %s", field, jsonType(te.Type.Kind().String()))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
			return kernel.Invalid(field, "unknown field %s", field)
		}
		return kernel.Errorf(kernel.CodeMalformedRequest, "the body does not match the expected shape")
	}
	return nil
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "integer"
	case "float32", "float64":
		return "number"
	case "slice", "array":
		return "array"
	case "struct", "map":
		return "object"
	}
	return kind
}

// checkContentType accepts application/json (with any charset parameter that names UTF-8).
func checkContentType(ct string) error {
	if ct == "" {
		return kernel.Errorf(CodeUnsupportedMedia, "send the body as application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return kernel.Errorf(CodeUnsupportedMedia, "send the body as application/json")
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return kernel.Errorf(CodeUnsupportedMedia, "the body must be UTF-8")
	}
	return nil
}

// readBody reads at most limit bytes; more is payload_too_large. A body that does not arrive
// in time (the read deadline of boundBody) is request_timeout, and one cut short (the client
// hung up, or sent less than its Content-Length) malformed_request: the client's doing, never
// an internal error.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, kernel.Errorf(kernel.CodePayloadTooLarge, "the body is larger than %d bytes", tooLarge.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, kernel.Errorf(codeRequestTimeout, "the body did not arrive in time")
	case err != nil:
		return nil, kernel.Errorf(kernel.CodeMalformedRequest, "the body was cut short")
	case int64(len(b)) > limit:
		return nil, kernel.Errorf(kernel.CodePayloadTooLarge, "the body is larger than %d bytes", limit)
	}
	return b, nil
}
