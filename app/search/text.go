package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// foldFrom and foldTo map each accented Latin letter (Latin-1 Supplement and Latin Extended-A,
// both cases) to its plain lower-case letter, position by position. SQLite's index folds
// diacritics itself (unicode61 remove_diacritics 2); PostgreSQL's simple configuration does
// not, so its index folds with the same pairs in SQL (translate() in migrate/postgres/0025),
// and a test holds the two lists to each other.
const (
	foldFrom = "ÀÁÂÃÄÅàáâãäåÇçÈÉÊËèéêëÌÍÎÏìíîïÑñÒÓÔÕÖØòóôõöøÙÚÛÜùúûüÝýÿĀāĂăĄąĆćĈĉĊċČčĎďĐđĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĦħĨĩĪīĬĭĮįİıĴĵĶķĹĺĻļĽľĿŀŁłŃńŅņŇňŌōŎŏŐőŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŦŧŨũŪūŬŭŮůŰűŲųŴŵŶŷŸŹźŻżŽž"
	foldTo   = "aaaaaaaaaaaacceeeeeeeeiiiiiiiinnoooooooooooouuuuuuuuyyyaaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiiijjkkllllllllllnnnnnnoooooorrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzz"
)

var foldMap = func() map[rune]rune {
	from, to := []rune(foldFrom), []rune(foldTo)
	if len(from) != len(to) {
		panic("search: fold lists differ in length")
	}
	m := make(map[rune]rune, len(from))
	for i, r := range from {
		m[r] = to[i]
	}
	return m
}()

// FoldPairs are the letters the index folds and what each becomes, in the same order.
func FoldPairs() (from, to string) { return foldFrom, foldTo }

// Fold is a word as the index keeps it: lower case, without the diacritics of Latin letters.
func Fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if f, ok := foldMap[r]; ok {
			r = f
		} else {
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isWordRune is what a word is made of: letters, digits and the marks that go on them.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// span is one word of a text: its bytes [start, end).
type span struct{ start, end int }

// words finds the words of s.
func words(s string) []span {
	var out []span
	start := -1
	for i, r := range s {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, span{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, span{start, len(s)})
	}
	return out
}

// Words are the folded words of s, in order: what the index holds of a text.
func Words(s string) []string {
	sp := words(s)
	out := make([]string, 0, len(sp))
	for _, w := range sp {
		out = append(out, Fold(s[w.start:w.end]))
	}
	return out
}

// IndexText is s as PostgreSQL's index reads it: its folded words, one space between each,
// so that the engine's own parser (which would read a host name or an e-mail address as one
// word) finds exactly the words a query is split into.
func IndexText(s string) string {
	return strings.Join(Words(s), " ")
}

// validUTF8 reports whether s is valid UTF-8 (a query is checked before it is parsed).
func validUTF8(s string) bool { return utf8.ValidString(s) }
