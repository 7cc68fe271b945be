package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/inbox"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// paneFixture is a chat view with fakes: a channel whose main thread holds a message with a
// thread of replies under it. The reader may see it all, unless denied.
type paneFixture struct {
	c             *chatView
	ch            chat.Channel
	main, replies chat.Thread
	// msgs are each thread's messages, oldest first; parent is the message the replies are
	// under.
	msgs   map[kernel.ID][]messaging.Message
	parent messaging.Message
	author kernel.ID
	denied bool
	// read is each MarkRead, as thread:message.
	read []string
	// post answers CreateMessage.
	post func(threadID kernel.ID, in messaging.NewMessage) (messaging.Message, error)
}

func newPaneFixture(t *testing.T, mainMessages int) *paneFixture {
	t.Helper()
	f := &paneFixture{author: kernel.NewID(), msgs: map[kernel.ID][]messaging.Message{}}
	f.ch = chat.Channel{ID: kernel.NewID(), SpaceID: kernel.NewID(), Name: "general", Kind: "channel"}
	f.main = chat.Thread{ID: kernel.NewID(), ChannelID: f.ch.ID, SpaceID: f.ch.SpaceID, IsMain: true}
	f.ch.MainThreadID = f.main.ID
	t0 := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	for i := range mainMessages {
		f.add(f.main.ID, fmt.Sprintf("channel message %d", i), t0.Add(time.Duration(i)*time.Minute))
	}
	f.parent = f.add(f.main.ID, "where do we meet?", t0.Add(time.Hour))
	f.replies = chat.Thread{ID: kernel.NewID(), ChannelID: f.ch.ID, SpaceID: f.ch.SpaceID, ParentMessageID: &f.parent.ID}
	f.parent.ReplyThreadID = &f.replies.ID
	f.msgs[f.main.ID][len(f.msgs[f.main.ID])-1] = f.parent
	f.add(f.replies.ID, "at the bothy", t0.Add(2*time.Hour))
	access := &fakeAccess{allow: func(kernel.Action, kernel.Resource) error { return nil }}
	chats := &paneChat{fakeChat: &fakeChat{threads: map[kernel.ID]chat.Thread{f.main.ID: f.main, f.replies.ID: f.replies}}, f: f}
	con := New(Deps{Identity: &paneIdentity{users: []identity.User{{ID: f.author, Handle: "ann", DisplayName: "Ann", Status: "active"}}},
		Chat: chats, Messages: &paneMessages{f: f}, Authz: access, Inbox: &paneInbox{f: f}})
	f.c = &chatView{Console: con}
	return f
}

// add appends a message to a thread of the fixture.
func (f *paneFixture) add(threadID kernel.ID, content string, at time.Time) messaging.Message {
	m := messaging.Message{ID: kernel.NewID(), ThreadID: threadID, ChannelID: f.ch.ID, SpaceID: f.ch.SpaceID, AuthorID: f.author,
		Content: content, CreatedAt: at, Version: 1}
	f.msgs[threadID] = append(f.msgs[threadID], m)
	return m
}

// get is the page at target with {id} = id, as a signed-in person's browser asks for it.
func (f *paneFixture) get(t *testing.T, h pageHandler, id kernel.ID, target string) *httptest.ResponseRecorder {
	t.Helper()
	return f.serve(t, h, id, httptest.NewRequest(http.MethodGet, target, nil))
}

func (f *paneFixture) serve(t *testing.T, h pageHandler, id kernel.ID, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	r.SetPathValue("id", string(id))
	w := httptest.NewRecorder()
	rq := &request{w: w, r: r, actor: kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}, csrf: "tok"}
	if err := h(rq); err != nil {
		f.c.fail(rq, err)
	}
	return w
}

type paneChat struct {
	*fakeChat
	f *paneFixture
}

func (p *paneChat) GetChannel(_ context.Context, _ kernel.Actor, id kernel.ID) (chat.Channel, error) {
	if p.f.denied || id != p.f.ch.ID {
		return chat.Channel{}, kernel.ErrNotFound
	}
	return p.f.ch, nil
}
func (p *paneChat) ListSpaces(context.Context, kernel.Actor) ([]chat.Space, error) { return nil, nil }

type paneMessages struct {
	MessageUseCases
	f *paneFixture
}

// ListMessages pages a thread as the store does: the newest Limit before Before, or the oldest
// Limit after After, oldest first, and whether there are more beyond.
func (p *paneMessages) ListMessages(_ context.Context, _ kernel.Actor, threadID kernel.ID, pg chat.Page) ([]messaging.Message, bool, error) {
	all, ok := p.f.msgs[threadID]
	if p.f.denied || !ok {
		return nil, false, kernel.ErrNotFound
	}
	if !pg.After.IsZero() {
		i, _ := slices.BinarySearchFunc(all, pg.After, func(m messaging.Message, id kernel.ID) int { return strings.Compare(string(m.ID), string(id)) })
		if i < len(all) && all[i].ID == pg.After {
			i++
		}
		rest := all[i:]
		return slices.Clone(rest[:min(pg.Limit, len(rest))]), len(rest) > pg.Limit, nil
	}
	end := len(all)
	if !pg.Before.IsZero() {
		end, _ = slices.BinarySearchFunc(all, pg.Before, func(m messaging.Message, id kernel.ID) int { return strings.Compare(string(m.ID), string(id)) })
	}
	start := max(0, end-pg.Limit)
	return slices.Clone(all[start:end]), start > 0, nil
}
func (p *paneMessages) GetMessage(_ context.Context, _ kernel.Actor, id kernel.ID) (messaging.Message, error) {
	for _, list := range p.f.msgs {
		for _, m := range list {
			if m.ID == id && !p.f.denied {
				return m, nil
			}
		}
	}
	return messaging.Message{}, kernel.ErrNotFound
}
func (p *paneMessages) ListPins(context.Context, kernel.Actor, kernel.ID) ([]messaging.PinnedMessage, error) {
	return nil, nil
}
func (p *paneMessages) CreateMessage(_ context.Context, _ kernel.Actor, threadID kernel.ID, in messaging.NewMessage) (messaging.Message, bool, error) {
	m, err := p.f.post(threadID, in)
	return m, false, err
}

type paneIdentity struct {
	IdentityUseCases
	users []identity.User
}

func (p *paneIdentity) ListUsers(_ context.Context, _ kernel.Actor, after kernel.ID, _ int) ([]identity.User, error) {
	if !after.IsZero() {
		return nil, nil
	}
	return p.users, nil
}

// paneInbox has read nothing yet and records what the pages mark read.
type paneInbox struct {
	InboxUseCases
	f *paneFixture
}

func (p *paneInbox) Position(context.Context, kernel.Actor, kernel.ID) (inbox.Position, error) {
	return inbox.Position{}, nil
}
func (p *paneInbox) MarkRead(_ context.Context, _ kernel.Actor, threadID, messageID kernel.ID) (inbox.Position, error) {
	p.f.read = append(p.f.read, string(threadID)+":"+string(messageID))
	return inbox.Position{}, nil
}
func (p *paneInbox) Unread(context.Context, kernel.Actor) (inbox.Unread, error) {
	return inbox.Unread{}, nil
}

// columns splits a page with the pane into the main column and the pane.
func columns(t *testing.T, body string) (main, pane string) {
	t.Helper()
	main, pane, ok := strings.Cut(body, `data-testid="thread-pane"`)
	if !ok {
		t.Fatalf("the page has no pane: %.3000s", body)
	}
	return main, pane
}

func TestThreadPane(t *testing.T) {
	t.Run("a thread under a message shows beside its channel: the channel's messages in the main column, the message, its replies and a composer in the pane", func(t *testing.T) {
		f := newPaneFixture(t, 3)
		w := f.get(t, f.c.threadPage, f.replies.ID, "/console/threads/"+string(f.replies.ID))
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %.2000s", w.Code, w.Body.String())
		}
		main, pane := columns(t, w.Body.String())
		for _, m := range f.msgs[f.main.ID] {
			if !strings.Contains(main, `id="m-`+string(m.ID)+`"`) {
				t.Errorf("the main column lacks the channel's message %q", m.Content)
			}
		}
		if !strings.Contains(main, `<main data-channel-id="`+string(f.ch.ID)+`"`) || !strings.Contains(main, `data-thread-id="`+string(f.main.ID)+`"`) ||
			!strings.Contains(main, `action="/console/threads/`+string(f.main.ID)+`/messages"`) {
			t.Errorf("the main column is not the channel's main thread: %.3000s", main)
		}
		for _, want := range []string{`data-testid="thread-parent"`, `data-id="` + string(f.parent.ID) + `"`, "where do we meet?",
			`id="m-` + string(f.msgs[f.replies.ID][0].ID) + `"`, "at the bothy", `data-thread-id="` + string(f.replies.ID) + `"`,
			`action="/console/threads/` + string(f.replies.ID) + `/messages"`, `data-testid="composer-input"`,
			`href="/console/channels/` + string(f.ch.ID) + `" class="pane-close" data-testid="thread-pane-close"`, "<h1>Re: where do we meet?</h1>"} {
			if !strings.Contains(pane, want) {
				t.Errorf("the pane lacks %s", want)
			}
		}
		if strings.Contains(main, "at the bothy") {
			t.Error("a reply shows in the channel's column")
		}
		// The parent shows twice; its element id (the anchors', the script's) once, in the channel.
		if n := strings.Count(w.Body.String(), `id="m-`+string(f.parent.ID)+`"`); n != 1 || strings.Contains(pane, `id="m-`+string(f.parent.ID)+`"`) {
			t.Errorf("the parent's id shows %d times, in the pane too: %v", n, strings.Contains(pane, `id="m-`+string(f.parent.ID)+`"`))
		}
		for _, id := range []string{"composer-" + string(f.main.ID), "composer-" + string(f.replies.ID)} {
			if n := strings.Count(w.Body.String(), `id="`+id+`"`); n != 1 {
				t.Errorf("the composer id %s shows %d times", id, n)
			}
		}
		if n := strings.Count(w.Body.String(), "<main"); n != 1 {
			t.Errorf("%d main elements", n)
		}
	})

	t.Run("showing the pane reads its thread, and the main column reads the channel as the channel's page does", func(t *testing.T) {
		f := newPaneFixture(t, 3)
		f.get(t, f.c.threadPage, f.replies.ID, "/console/threads/"+string(f.replies.ID))
		want := []string{string(f.replies.ID) + ":" + string(f.msgs[f.replies.ID][0].ID), string(f.main.ID) + ":" + string(f.parent.ID)}
		slices.Sort(f.read)
		slices.Sort(want)
		if !slices.Equal(f.read, want) {
			t.Fatalf("marked read %v, want %v", f.read, want)
		}
	})

	t.Run("a message older than the channel's newest page shows in the main column with the messages around it", func(t *testing.T) {
		f := newPaneFixture(t, 0)
		t0 := f.parent.CreatedAt
		for i := range chatPageMessages + 10 {
			f.add(f.main.ID, fmt.Sprintf("later %d", i), t0.Add(time.Duration(i+1)*time.Minute))
		}
		main, _ := columns(t, f.get(t, f.c.threadPage, f.replies.ID, "/console/threads/"+string(f.replies.ID)).Body.String())
		if !strings.Contains(main, `id="m-`+string(f.parent.ID)+`"`) || !strings.Contains(main, `data-testid="latest"`) || strings.Contains(main, "data-latest") {
			t.Fatalf("the main column does not show the message away from the newest: %.3000s", main)
		}
		// Away from the newest the channel is not read.
		for _, r := range f.read {
			if strings.HasPrefix(r, string(f.main.ID)) {
				t.Errorf("the channel was marked read at %s", r)
			}
		}
	})

	t.Run("one who may not read the channel gets 404 and nothing is read", func(t *testing.T) {
		f := newPaneFixture(t, 3)
		f.denied = true
		w := f.get(t, f.c.threadPage, f.replies.ID, "/console/threads/"+string(f.replies.ID))
		if w.Code != http.StatusNotFound || strings.Contains(w.Body.String(), "where do we meet?") || strings.Contains(w.Body.String(), "at the bothy") {
			t.Fatalf("status %d: %.2000s", w.Code, w.Body.String())
		}
		if len(f.read) != 0 {
			t.Fatalf("marked read %v", f.read)
		}
	})

	t.Run("a channel's own page shows its thread alone", func(t *testing.T) {
		f := newPaneFixture(t, 3)
		w := f.get(t, f.c.channelPage, f.ch.ID, "/console/channels/"+string(f.ch.ID))
		body := w.Body.String()
		if w.Code != http.StatusOK || strings.Contains(body, "thread-pane") || strings.Contains(body, "thread-parent") ||
			strings.Count(body, `data-testid="thread"`) != 1 || !strings.Contains(body, `data-testid="channels-toggle"`) {
			t.Fatalf("status %d: %.3000s", w.Code, body)
		}
		if !strings.Contains(body, `href="/console/threads/`+string(f.replies.ID)+`" data-testid="message-replies"`) {
			t.Fatal("the message does not lead to its replies")
		}
	})

	t.Run("without the script a post in the pane comes back to the page with the pane, and a refused one there with its text", func(t *testing.T) {
		f := newPaneFixture(t, 3)
		f.post = func(threadID kernel.ID, in messaging.NewMessage) (messaging.Message, error) {
			if strings.TrimSpace(in.Content) == "" {
				return messaging.Message{}, kernel.Errorf(kernel.CodeValidation, "content is empty")
			}
			return f.add(threadID, in.Content, time.Now()), nil
		}
		form := func(content string) *http.Request {
			r := httptest.NewRequest(http.MethodPost, "/console/threads/"+string(f.replies.ID)+"/messages",
				strings.NewReader(url.Values{"content": {content}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		}
		w := f.serve(t, f.c.postMessage, f.replies.ID, form("see you there"))
		got := f.msgs[f.replies.ID][len(f.msgs[f.replies.ID])-1]
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/threads/"+string(f.replies.ID)+"#m-"+string(got.ID) {
			t.Fatalf("status %d, to %q", w.Code, w.Header().Get("Location"))
		}
		w = f.serve(t, f.c.postMessage, f.replies.ID, form("   "))
		if w.Code != http.StatusUnprocessableEntity {
			t.Fatalf("status %d", w.Code)
		}
		main, pane := columns(t, w.Body.String())
		if !strings.Contains(pane, `data-testid="form-error"`) || strings.Contains(main, `data-testid="form-error"`) {
			t.Fatalf("the refusal is not in the pane's composer: %.3000s", pane)
		}
	})
}
