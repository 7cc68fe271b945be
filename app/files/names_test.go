package files

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("é", 200) + ".tar.gz"
	for _, c := range []struct{ in, want string }{
		{"holiday.png", "holiday.png"},
		{"../../etc/passwd", "passwd"},
		{`C:\Users\ada\report.pdf`, "report.pdf"},
		{"bad\x00na\x1fme.txt", "badname.txt"},
		{"invoice\u202Egpj.exe", "invoicegpj.exe"},
		{"  ..hidden.  ", "hidden"},
		{"...", "file"},
		{"", "file"},
		{"dir/", "file"},
		{"\xff\xfe.bin", "\uFFFD.bin"},
	} {
		if got := SanitizeName(c.in); got != c.want {
			t.Errorf("SanitizeName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	got := SanitizeName(long)
	if len(got) > MaxNameBytes || !utf8.ValidString(got) || !strings.HasSuffix(got, ".gz") {
		t.Errorf("a long name is cut to %d bytes %q", len(got), got)
	}
}

func TestChooseType(t *testing.T) {
	for _, c := range []struct{ declared, sniffed, want string }{
		{"image/png", "image/png", "image/png"},
		{"image/png", "text/html; charset=utf-8", "text/html; charset=utf-8"},
		{"text/html", "text/plain; charset=utf-8", "text/plain; charset=utf-8"},
		{"image/svg+xml", "text/xml; charset=utf-8", "text/xml; charset=utf-8"},
		{"text/csv", "text/plain; charset=utf-8", "text/csv"},
		{"application/json", "text/plain; charset=utf-8", "application/json"},
		{"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{"application/x-sqlite3", "application/octet-stream", "application/x-sqlite3"},
		{"application/javascript", "application/octet-stream", "application/octet-stream"},
		{"text/plain", "application/octet-stream", "application/octet-stream"},
		{"", "image/gif", "image/gif"},
		{"not a type", "image/gif", "image/gif"},
		{"IMAGE/PNG", "image/png", "image/png"},
	} {
		if got := ChooseType(c.declared, c.sniffed); got != c.want {
			t.Errorf("ChooseType(%q, %q) = %q, want %q", c.declared, c.sniffed, got, c.want)
		}
	}
}

func TestInline(t *testing.T) {
	for ct, want := range map[string]bool{"image/png": true, "image/jpeg": true, "video/mp4": true, "audio/mpeg": true,
		"image/svg+xml": false, "text/html; charset=utf-8": false, "application/pdf": false, "text/plain": false} {
		if Inline(ct) != want {
			t.Errorf("Inline(%q) = %v", ct, !want)
		}
	}
}

func TestLimitReader(t *testing.T) {
	l := &limitReader{r: strings.NewReader("0123456789"), left: 10}
	b := make([]byte, 4)
	total := 0
	for {
		n, err := l.Read(b)
		total += n
		if err != nil {
			break
		}
	}
	if total != 10 || l.over {
		t.Fatalf("a body of exactly the limit: %d bytes, over %v", total, l.over)
	}
	l = &limitReader{r: strings.NewReader("0123456789x"), left: 10}
	var err error
	for err == nil {
		_, err = l.Read(b)
	}
	if !l.over {
		t.Fatalf("a body past the limit is not refused: %v", err)
	}
}
