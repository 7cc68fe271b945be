package gateway

import (
	"testing"
	"time"
)

func TestFocused(t *testing.T) {
	w := newWorld(t)
	w.runTail()
	c := w.connect()
	c.identify("ada", -1)
	c.catchUp()
	waitFocused := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for w.g.Focused(w.ada.ID, w.openTh) != want {
			if time.Now().After(deadline) {
				t.Fatalf("Focused(ada, thread) stays %v", !want)
			}
			time.Sleep(time.Millisecond)
		}
	}

	t.Run("a person is focused on the thread its connection looks at, and no one else is", func(t *testing.T) {
		c.send(`{"op":"focus","d":{"thread_id":"` + string(w.openTh) + `"}}`)
		waitFocused(true)
		if w.g.Focused(w.bob.ID, w.openTh) || w.g.Focused(w.ada.ID, w.shutTh) {
			t.Fatal("focus seen for another person or another thread")
		}
	})

	t.Run("focusing nothing ends it", func(t *testing.T) {
		c.send(`{"op":"focus","d":{"thread_id":null}}`)
		waitFocused(false)
	})

	t.Run("a connection that ends is focused on nothing", func(t *testing.T) {
		c.send(`{"op":"focus","d":{"thread_id":"` + string(w.openTh) + `"}}`)
		waitFocused(true)
		c.tr.Abort()
		waitFocused(false)
	})
}
