package kernel

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// ID is a UUIDv7 in its canonical lower-case text form, generated in Go. The text form is what
// both engines store, so ids sort by creation time in SQL as well as in Go.
type ID string

// NilID is the empty id: no principal, no resource.
const NilID ID = ""

var idGen struct {
	sync.Mutex
	lastMS  int64
	counter uint16 // 12-bit rand_a used as a counter within one millisecond: ids stay monotonic
}

// NewID returns a new UUIDv7. Ids made by one process are strictly increasing, which keyset
// pagination by id relies on.
func NewID() ID { return newIDAt(time.Now()) }

func newIDAt(t time.Time) ID {
	var b [16]byte
	_, _ = rand.Read(b[6:])
	ms := t.UnixMilli()
	idGen.Lock()
	if ms <= idGen.lastMS {
		ms = idGen.lastMS
		idGen.counter++
		if idGen.counter > 0x0fff { // counter exhausted: borrow the next millisecond
			ms++
			idGen.counter = uint16(binary.BigEndian.Uint16(b[6:8])) & 0x01ff
		}
	} else {
		idGen.counter = uint16(binary.BigEndian.Uint16(b[6:8])) & 0x01ff
	}
	idGen.lastMS = ms
	c := idGen.counter
	idGen.Unlock()

	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	b[2] = byte(ms >> 24)
	b[3] = byte(ms >> 16)
	b[4] = byte(ms >> 8)
	b[5] = byte(ms)
	b[6] = 0x70 | byte(c>>8)
	b[7] = byte(c)
	b[8] = (b[8] & 0x3f) | 0x80
	return ID(encodeUUID(b))
}

func encodeUUID(b [16]byte) string {
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// ParseID checks that s is a UUIDv7 in canonical lower-case form; anything else is
// validation_failed. (A malformed id in a URL path is simply not found: the HTTP layer says so.)
func ParseID(s string) (ID, error) {
	if !validUUIDv7(s) {
		return NilID, Errorf(CodeValidation, "malformed id")
	}
	return ID(s), nil
}

func validUUIDv7(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	for i := 0; i < 36; i++ {
		switch i {
		case 8, 13, 18, 23:
			continue
		}
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	if s[14] != '7' {
		return false
	}
	switch s[19] {
	case '8', '9', 'a', 'b':
		return true
	}
	return false
}

func (id ID) String() string { return string(id) }

// IsZero reports whether id is empty.
func (id ID) IsZero() bool { return id == NilID }
