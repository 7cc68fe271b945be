package files

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameBytes bounds a file's name; MaxContentTypeBytes the content type a resumable upload
// declares.
const (
	MaxNameBytes        = 255
	MaxContentTypeBytes = 255
)

// SanitizeName is the name a file is stored under: the last element of what the client sent
// (no directory of its machine, with either separator), without control characters or the
// marks that reverse the direction of text (which make "exe.jpg" of "gpj.exe"), with invalid
// UTF-8 replaced, trimmed of spaces and dots at both ends (a name of only dots is a path), and cut
// at MaxNameBytes on a character boundary, keeping its extension. What is left empty is "file".
func SanitizeName(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || isBidiControl(r) {
			return -1
		}
		return r
	}, name)
	name = strings.Trim(name, " .\u00a0")
	if name == "" {
		return "file"
	}
	if len(name) <= MaxNameBytes {
		return name
	}
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i > 0 && len(name)-i <= 16 {
		ext = name[i:]
	}
	return cutUTF8(name[:len(name)-len(ext)], MaxNameBytes-len(ext)) + ext
}

// cutUTF8 is the longest prefix of s of at most n bytes that ends on a character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// isBidiControl reports the embedding, override and isolate marks of bidirectional text.
func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}
