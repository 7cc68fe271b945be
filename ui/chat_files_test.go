package ui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// postingMessages records what the composer's post hands to messaging and refuses it, so the
// handler answers with the refusal alone.
type postingMessages struct {
	MessageUseCases
	got *messaging.NewMessage
	err error // the refusal; nil: a validation error
}

func (p *postingMessages) CreateMessage(_ context.Context, _ kernel.Actor, _ kernel.ID, in messaging.NewMessage) (messaging.Message, bool, error) {
	p.got = &in
	if p.err != nil {
		return messaging.Message{}, false, p.err
	}
	return messaging.Message{}, false, kernel.Invalid("content", "refused by the test")
}

func postComposer(t *testing.T, c *chatView, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/console/threads/x/messages", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set(fragmentHeader, "1")
	r.SetPathValue("id", string(kernel.NewID()))
	if err := r.ParseForm(); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	rq := &request{w: w, r: r, actor: kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}, csrf: "tok"}
	if err := c.postMessage(rq); err != nil {
		c.fail(rq, err)
	}
	return w
}

func TestComposerAttachments(t *testing.T) {
	newView := func() (*chatView, *postingMessages) {
		msgs := &postingMessages{}
		con := New(Deps{Identity: noIdentity{}, Chat: &fakeChat{threads: map[kernel.ID]chat.Thread{}}, Messages: msgs})
		return &chatView{Console: con}, msgs
	}

	t.Run("the ids of the uploaded files go to messaging in the order they came, with or without text", func(t *testing.T) {
		c, msgs := newView()
		a, b := kernel.NewID(), kernel.NewID()
		w := postComposer(t, c, url.Values{"content": {""}, "client_msg_id": {"k1"}, "attachment_id": {string(b), string(a)}})
		if msgs.got == nil {
			t.Fatalf("messaging was not called: %d %s", w.Code, w.Body)
		}
		if got := msgs.got.AttachmentIDs; len(got) != 2 || got[0] != b || got[1] != a || msgs.got.Content != "" {
			t.Fatalf("messaging got %+v", *msgs.got)
		}
		if w.Code != http.StatusUnprocessableEntity || w.Body.String() != "refused by the test" {
			t.Fatalf("the refusal answered %d %q", w.Code, w.Body)
		}
	})

	t.Run("a file messaging will not attach is refused with its reason, as the composer shows it", func(t *testing.T) {
		c, msgs := newView()
		msgs.err = kernel.Errorf(files.CodeAttachmentInvalid, "the file is attached to another message")
		w := postComposer(t, c, url.Values{"content": {"hi"}, "attachment_id": {string(kernel.NewID())}})
		if w.Code != http.StatusUnprocessableEntity || w.Body.String() != "the file is attached to another message" {
			t.Fatalf("the refusal answered %d %q", w.Code, w.Body)
		}
	})

	t.Run("a post without files carries none", func(t *testing.T) {
		c, msgs := newView()
		postComposer(t, c, url.Values{"content": {"hi"}})
		if msgs.got == nil || msgs.got.AttachmentIDs != nil {
			t.Fatalf("messaging got %+v", msgs.got)
		}
	})

	t.Run("a malformed id or more than ten files are refused before messaging", func(t *testing.T) {
		for name, ids := range map[string][]string{
			"malformed": {"not-an-id"},
			"eleven":    strings.Fields(strings.Repeat(string(kernel.NewID())+" ", files.MaxAttachments+1)),
		} {
			c, msgs := newView()
			w := postComposer(t, c, url.Values{"content": {"hi"}, "attachment_id": ids})
			if msgs.got != nil || w.Code != http.StatusUnprocessableEntity {
				t.Errorf("%s: messaging called %v, status %d %s", name, msgs.got != nil, w.Code, w.Body)
			}
		}
	})
}

func TestMessageViewAttachments(t *testing.T) {
	alice := kernel.NewID()
	dir := &principalDir{byID: map[kernel.ID]principalInfo{alice: {ID: alice, Handle: "alice", Name: "Alice"}}}
	w, h := 800, 600
	img, doc := kernel.NewID(), kernel.NewID()
	m := messaging.Message{ID: kernel.NewID(), AuthorID: alice, CreatedAt: time.Now(), Attachments: []files.Attachment{
		{ID: img, Name: "cat.jpg", ContentType: "image/jpeg", Size: 2048, Width: &w, Height: &h},
		{ID: doc, Name: "plan.pdf", ContentType: "application/pdf", Size: 10},
	}}
	v := messageView(m, dir, nil, alice, messageAbilities{}, "tok")
	if len(v.Attachments) != 2 {
		t.Fatalf("attachments %+v", v.Attachments)
	}
	if a := v.Attachments[0]; !a.Image || a.Width != 360 || a.Height != 270 || a.Thumb != "/api/v1/files/"+string(img)+"/thumbnail" || a.Size != "2.0 KB" {
		t.Errorf("the image %+v", a)
	}
	if a := v.Attachments[1]; a.Image || a.Kind != "PDF" || a.Href != "/api/v1/files/"+string(doc)+"/content" {
		t.Errorf("the file %+v", a)
	}
	m.Deleted = true
	if v := messageView(m, dir, nil, alice, messageAbilities{}, "tok"); len(v.Attachments) != 0 {
		t.Errorf("a deleted message shows its files: %+v", v.Attachments)
	}
}
