package config

import (
	"io"
	"os"
	"strings"
)

// maxSecretFile bounds what a file: reference may hold; a secret is a line, not a document.
const maxSecretFile = 64 << 10

// RefError is a reference that could not be resolved. It carries the reference (which names a
// variable or a file and is safe to show) and a stable code, never the secret.
type RefError struct {
	Ref string
	// Code is ref_invalid, env_unset, env_empty, file_unreadable, file_empty or file_too_large.
	Code string
}

func (e *RefError) Error() string { return "secret reference " + e.Ref + ": " + e.Code }

// ResolveRef returns the secret a reference points to: env:NAME reads the environment variable
// NAME, file:PATH reads the file (one trailing newline removed). Call it where the secret is
// used, not earlier, and never log or print its result. Errors are *RefError.
func ResolveRef(ref string) (string, error) {
	scheme, target, err := parseRef(ref)
	if err != nil {
		return "", err
	}
	var s string
	switch scheme {
	case "env":
		v, ok := os.LookupEnv(target)
		if !ok {
			return "", &RefError{Ref: ref, Code: "env_unset"}
		}
		if v == "" {
			return "", &RefError{Ref: ref, Code: "env_empty"}
		}
		s = v
	case "file":
		f, err := os.Open(target)
		if err != nil {
			return "", &RefError{Ref: ref, Code: "file_unreadable"}
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
		if err != nil {
			return "", &RefError{Ref: ref, Code: "file_unreadable"}
		}
		if len(b) > maxSecretFile {
			return "", &RefError{Ref: ref, Code: "file_too_large"}
		}
		s = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if s == "" {
			return "", &RefError{Ref: ref, Code: "file_empty"}
		}
	}
	return s, nil
}

// parseRef splits env:NAME or file:PATH.
func parseRef(ref string) (scheme, target string, err error) {
	invalid := &RefError{Ref: "(invalid)", Code: "ref_invalid"}
	scheme, target, ok := strings.Cut(ref, ":")
	if !ok {
		return "", "", invalid
	}
	switch scheme {
	case "env":
		if !envName(target) {
			return "", "", invalid
		}
	case "file":
		if target == "" || strings.ContainsRune(target, 0) {
			return "", "", invalid
		}
	default:
		return "", "", invalid
	}
	return scheme, target, nil
}

func envName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
