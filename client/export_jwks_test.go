package client

import "time"

// SetKeySetClock sets the clock a key set reads, so that a test can move past its refetch pause.
func SetKeySetClock(k *KeySet, now func() time.Time) { k.now = now }
