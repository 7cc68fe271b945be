package names

import "sort"

// NFC returns s in Unicode Normalization Form C (canonical decomposition, canonical order,
// canonical composition; UAX #15), from the tables gen.go writes. It is here rather than
// golang.org/x/text/unicode/norm because the domain imports no third-party module; a name
// needs only the canonical forms, about 3,400 table rows. s must be valid UTF-8.
func NFC(s string) string {
	if inert(s) {
		return s
	}
	rs := decompose(s)
	reorder(rs)
	rs = compose(rs)
	return string(rs)
}

// inert reports whether s holds only runes below U+0300, which NFC leaves as they are: they
// are all starters, and none composes with another rune below U+0300.
func inert(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xCC { // the lead byte of U+0300 and above
			return false
		}
	}
	return true
}

type cccRange struct {
	lo, hi rune
	ccc    uint8
}

type decomposition struct {
	r rune
	d string
}

type composition struct {
	a, b, c rune
}

// Hangul syllables compose and decompose by arithmetic (Unicode chapter 3.12).
const (
	hangulBase   = 0xAC00
	hangulLBase  = 0x1100
	hangulVBase  = 0x1161
	hangulTBase  = 0x11A7
	hangulLCount = 19
	hangulVCount = 21
	hangulTCount = 28
	hangulNCount = hangulVCount * hangulTCount
	hangulSCount = 11172
)

func ccc(r rune) uint8 {
	if r < 0x0300 {
		return 0
	}
	i := sort.Search(len(cccTable), func(i int) bool { return cccTable[i].hi >= r })
	if i < len(cccTable) && cccTable[i].lo <= r {
		return cccTable[i].ccc
	}
	return 0
}

func decompose(s string) []rune {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		switch {
		case r < 0x00C0:
			out = append(out, r)
		case r >= hangulBase && r < hangulBase+hangulSCount:
			i := r - hangulBase
			out = append(out, hangulLBase+i/hangulNCount, hangulVBase+(i%hangulNCount)/hangulTCount)
			if t := i % hangulTCount; t != 0 {
				out = append(out, hangulTBase+t)
			}
		default:
			i := sort.Search(len(decompTable), func(i int) bool { return decompTable[i].r >= r })
			if i < len(decompTable) && decompTable[i].r == r {
				for _, d := range decompTable[i].d {
					out = append(out, d)
				}
			} else {
				out = append(out, r)
			}
		}
	}
	return out
}

// reorder sorts every run of non-starters by combining class, keeping the order of equal ones.
func reorder(rs []rune) {
	for i := 0; i < len(rs); {
		if ccc(rs[i]) == 0 {
			i++
			continue
		}
		j := i
		for j < len(rs) && ccc(rs[j]) != 0 {
			j++
		}
		if j-i > 1 {
			run := rs[i:j]
			sort.SliceStable(run, func(a, b int) bool { return ccc(run[a]) < ccc(run[b]) })
		}
		i = j
	}
}

// compose applies canonical composition to a decomposed, reordered rs, in place.
func compose(rs []rune) []rune {
	out := rs[:0]
	starter := -1 // index in out of the last starter
	var lastCCC uint8
	for _, r := range rs {
		c := ccc(r)
		if starter >= 0 {
			adjacent := len(out)-1 == starter
			if adjacent || lastCCC != 0 && lastCCC < c {
				if p, ok := composePair(out[starter], r); ok {
					out[starter] = p
					continue
				}
			}
		}
		if c == 0 {
			starter = len(out)
		}
		out = append(out, r)
		lastCCC = c
	}
	return out
}

func composePair(a, b rune) (rune, bool) {
	if a >= hangulLBase && a < hangulLBase+hangulLCount && b >= hangulVBase && b < hangulVBase+hangulVCount {
		return hangulBase + ((a-hangulLBase)*hangulVCount+(b-hangulVBase))*hangulTCount, true
	}
	if a >= hangulBase && a < hangulBase+hangulSCount && (a-hangulBase)%hangulTCount == 0 &&
		b > hangulTBase && b < hangulTBase+hangulTCount {
		return a + (b - hangulTBase), true
	}
	i := sort.Search(len(compTable), func(i int) bool {
		return compTable[i].a > a || compTable[i].a == a && compTable[i].b >= b
	})
	if i < len(compTable) && compTable[i].a == a && compTable[i].b == b {
		return compTable[i].c, true
	}
	return 0, false
}
