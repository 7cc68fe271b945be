package files

import (
	"mime"
	"strings"
)

// Content types. A file's type is what its first bytes say (the sniffer of the HTTP adapter,
// which follows the WHATWG algorithm); the type the client declared is kept only where it agrees
// with them, so that a client cannot label a script as an image.

// ChooseType is the type a file is stored with, from the type the client declared and the one
// sniffed from its first bytes:
//   - the same media type: the declared one (with its parameters);
//   - sniffed generic text and declared a text type that is not markup (text/csv, text/markdown,
//     application/json, ...): the declared one, since the sniffer knows no such kinds;
//   - sniffed a ZIP and declared a format built on ZIP (docx, xlsx, odt, epub, jar, ...): the declared;
//   - sniffed unknown binary and declared a type that no browser would run: the declared;
//   - anything else: the sniffed one.
func ChooseType(declared, sniffed string) string {
	sniffedBase := baseType(sniffed)
	if sniffedBase == "" {
		sniffedBase, sniffed = "application/octet-stream", "application/octet-stream"
	}
	declaredBase := baseType(declared)
	if declaredBase == "" {
		return sniffed
	}
	switch {
	case declaredBase == sniffedBase:
		return normalizedType(declared)
	case sniffedBase == "text/plain" && plainText(declaredBase):
		return normalizedType(declared)
	case sniffedBase == "application/zip" && zipBased(declaredBase):
		return declaredBase
	case sniffedBase == "application/octet-stream" && !active(declaredBase) && !strings.HasPrefix(declaredBase, "text/"):
		return declaredBase
	}
	return sniffed
}

// baseType is the media type of t in lower case without parameters; "" when t does not parse.
func baseType(t string) string {
	if t == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(t)
	if err != nil || !strings.Contains(mt, "/") {
		return ""
	}
	return mt
}

// normalizedType is t formatted again (lower-case type, parameters quoted where needed), or its
// base type when the parameters do not format.
func normalizedType(t string) string {
	mt, params, err := mime.ParseMediaType(t)
	if err != nil {
		return baseType(t)
	}
	if s := mime.FormatMediaType(mt, params); s != "" {
		return s
	}
	return mt
}

// plainText reports the text formats the sniffer sees as plain text.
func plainText(mt string) bool {
	if active(mt) {
		return false
	}
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	switch mt {
	case "application/json", "application/x-yaml", "application/yaml", "application/toml", "application/x-ndjson",
		"application/sql", "application/x-sh", "application/x-python", "application/x-tex":
		return true
	}
	return strings.HasSuffix(mt, "+json")
}

// zipBased reports the formats whose container is a ZIP archive.
func zipBased(mt string) bool {
	return strings.HasPrefix(mt, "application/vnd.openxmlformats-officedocument.") ||
		strings.HasPrefix(mt, "application/vnd.oasis.opendocument.") ||
		mt == "application/epub+zip" || mt == "application/java-archive" || mt == "application/vnd.android.package-archive" ||
		mt == "application/x-zip-compressed"
}

// active reports types a browser would render as a document or run: a file of such a type is
// served as an attachment under a sandbox, and a declared one never overrides the sniffer.
func active(mt string) bool {
	switch mt {
	case "text/html", "application/xhtml+xml", "image/svg+xml", "text/xml", "application/xml",
		"text/javascript", "application/javascript", "application/ecmascript", "text/ecmascript",
		"application/x-shockwave-flash", "application/pdf", "text/xsl":
		return true
	}
	return false
}

// Inline reports whether a file of type t is shown in the browser (Content-Disposition inline):
// images, audio and video of the formats browsers decode as media, never as a document. SVG is
// not among them: it is a document that may hold script.
func Inline(t string) bool {
	switch baseType(t) {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp",
		"audio/mpeg", "audio/ogg", "audio/wav", "audio/wave", "audio/webm", "audio/flac", "audio/aac", "audio/mp4",
		"video/mp4", "video/webm", "video/ogg":
		return true
	}
	return false
}

// Thumbnailable reports whether the thumbnail job makes a thumbnail of a file of type t.
func Thumbnailable(t string) bool {
	switch baseType(t) {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}
