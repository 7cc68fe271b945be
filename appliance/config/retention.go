package config

import "time"

// retention checks a retention key: 0 keeps everything; otherwise from a second (short, for
// a test instance) to a hundred years.
func retention(v any) string {
	if d := v.(time.Duration); d != 0 && (d < time.Second || d > 100*8760*time.Hour) {
		return "must be 0 (keep everything) or a duration from 1s to 876000h"
	}
	return ""
}
