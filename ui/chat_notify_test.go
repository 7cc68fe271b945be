package ui

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/notify"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// fakeNotify is notify's use cases with function fields; a nil field is not expected to be called.
type fakeNotify struct {
	level           func(channelID kernel.ID) (notify.ChannelLevel, error)
	setLevel        func(channelID kernel.ID, level string) (notify.ChannelLevel, error)
	subscription    func(threadID kernel.ID) (notify.Subscription, error)
	setSubscription func(threadID kernel.ID, level string) (notify.Subscription, error)
}

var _ NotifyUseCases = (*fakeNotify)(nil)

func (f *fakeNotify) Level(_ context.Context, _ kernel.Actor, id kernel.ID) (notify.ChannelLevel, error) {
	return f.level(id)
}
func (f *fakeNotify) SetLevel(_ context.Context, _ kernel.Actor, id kernel.ID, l string) (notify.ChannelLevel, error) {
	return f.setLevel(id, l)
}
func (f *fakeNotify) Subscription(_ context.Context, _ kernel.Actor, id kernel.ID) (notify.Subscription, error) {
	return f.subscription(id)
}
func (f *fakeNotify) SetSubscription(_ context.Context, _ kernel.Actor, id kernel.ID, l string) (notify.Subscription, error) {
	return f.setSubscription(id, l)
}

// fakeThreads renames threads through its function field.
type fakeThreads struct {
	update func(id kernel.ID, p chat.ThreadPatch) (chat.Thread, error)
}

var _ ThreadTitles = (*fakeThreads)(nil)

func (f *fakeThreads) UpdateThread(_ context.Context, _ kernel.Actor, id kernel.ID, p chat.ThreadPatch) (chat.Thread, error) {
	return f.update(id, p)
}

// fakeChat answers the thread reads of the notify forms from threads; the rest of chat's use
// cases are not called by them.
type fakeChat struct {
	ChatUseCases
	threads map[kernel.ID]chat.Thread
}

func (f *fakeChat) Thread(_ context.Context, id kernel.ID) (chat.Thread, error) {
	if th, ok := f.threads[id]; ok {
		return th, nil
	}
	return chat.Thread{}, kernel.ErrNotFound
}
func (f *fakeChat) ThreadRef(ctx context.Context, id kernel.ID) (chat.Thread, error) {
	return f.Thread(ctx, id)
}

// fakeAccess decides every Authorize through allow; the grant reads are not called.
type fakeAccess struct {
	AccessUseCases
	allow func(action kernel.Action, r kernel.Resource) error
}

func (f *fakeAccess) Authorize(_ context.Context, _ kernel.Actor, a kernel.Action, r kernel.Resource) error {
	return f.allow(a, r)
}

// notifyFixture is a chat view with fakes, a channel, its main thread and a thread of its own.
type notifyFixture struct {
	c         *chatView
	ch        chat.Channel
	main, own chat.Thread
	notify    *fakeNotify
	threads   *fakeThreads
	denied    map[kernel.Action]error
}

func newNotifyFixture(t *testing.T) *notifyFixture {
	t.Helper()
	f := &notifyFixture{notify: &fakeNotify{}, threads: &fakeThreads{}, denied: map[kernel.Action]error{}}
	f.ch = chat.Channel{ID: kernel.NewID(), SpaceID: kernel.NewID(), Name: "general", Kind: "channel"}
	f.main = chat.Thread{ID: kernel.NewID(), ChannelID: f.ch.ID, SpaceID: f.ch.SpaceID, IsMain: true}
	f.own = chat.Thread{ID: kernel.NewID(), ChannelID: f.ch.ID, SpaceID: f.ch.SpaceID, Title: "Plans"}
	f.ch.MainThreadID = f.main.ID
	access := &fakeAccess{allow: func(a kernel.Action, _ kernel.Resource) error { return f.denied[a] }}
	con := New(Deps{Identity: noIdentity{}, Chat: &fakeChat{threads: map[kernel.ID]chat.Thread{f.main.ID: f.main, f.own.ID: f.own}},
		Messages: noMessages{}, Authz: access, Notify: f.notify, Threads: f.threads})
	f.c = &chatView{Console: con}
	return f
}

// noIdentity and noMessages stand for use cases the notify forms never call.
type noIdentity struct{ IdentityUseCases }
type noMessages struct{ MessageUseCases }

// post is a signed-in person's form to path with {id} = id; it answers the recorder.
func (f *notifyFixture) post(t *testing.T, h pageHandler, id kernel.ID, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/console/x", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.SetPathValue("id", string(id))
	if err := r.ParseForm(); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	rq := &request{w: w, r: r, actor: kernel.Actor{ID: kernel.NewID(), Kind: kernel.KindPerson}, csrf: "tok"}
	if err := h(rq); err != nil {
		f.c.fail(rq, err)
	}
	return w
}

// flashOf is the flash a response leaves for the next page.
func flashOf(t *testing.T, w *httptest.ResponseRecorder) layouts.Flash {
	t.Helper()
	for _, ck := range w.Result().Cookies() {
		if ck.Name == flashCookieName {
			kind, enc, _ := strings.Cut(ck.Value, ":")
			text, err := base64.RawURLEncoding.DecodeString(enc)
			if err != nil {
				t.Fatal(err)
			}
			return layouts.Flash{Kind: kind, Text: string(text)}
		}
	}
	return layouts.Flash{}
}

func renderThread(t *testing.T, tv pages.ThreadView) string {
	t.Helper()
	var b strings.Builder
	if err := pages.Chat(pages.ChatView{Thread: &tv}).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestThreadHeaderNotifyControls(t *testing.T) {
	t.Run("a channel's main thread shows the person's level, saying when it is the default", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.notify.level = func(id kernel.ID) (notify.ChannelLevel, error) {
			return notify.ChannelLevel{ChannelID: id, Level: notify.LevelMentions, Default: true}, nil
		}
		var tv pages.ThreadView
		rq := &request{r: httptest.NewRequest(http.MethodGet, "/", nil), csrf: "tok"}
		if err := f.c.withNotify(rq, &tv, f.main, f.ch); err != nil {
			t.Fatal(err)
		}
		if tv.Notify == nil || tv.Notify.Level == nil || tv.Notify.Follow != nil || tv.Notify.Rename != nil {
			t.Fatalf("controls %+v", tv.Notify)
		}
		html := renderThread(t, tv)
		for _, want := range []string{`data-testid="notify-level"`, `data-testid="notify-level-save"`, `<option value="mentions" selected>Mentions only (default)</option>`,
			`data-default`, "Notified of mentions only (the default)", `action="/console/channels/` + string(f.ch.ID) + `/notifications"`} {
			if !strings.Contains(html, want) {
				t.Fatalf("the header lacks %q:\n%s", want, html)
			}
		}
		if strings.Contains(html, `data-testid="thread-follow"`) || strings.Contains(html, `data-testid="thread-title-form"`) {
			t.Fatal("a main thread offers Follow or Rename")
		}
	})

	t.Run("a DM's default is every message, and a chosen level is not called the default", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.ch.Kind = chat.KindDM
		f.notify.level = func(id kernel.ID) (notify.ChannelLevel, error) {
			return notify.ChannelLevel{ChannelID: id, Level: notify.LevelNone}, nil
		}
		var tv pages.ThreadView
		if err := f.c.withNotify(&request{r: httptest.NewRequest(http.MethodGet, "/", nil)}, &tv, f.main, f.ch); err != nil {
			t.Fatal(err)
		}
		html := renderThread(t, tv)
		if !strings.Contains(html, `<option value="all">All messages (default)</option>`) || !strings.Contains(html, `<option value="none" selected>Nothing</option>`) ||
			strings.Contains(html, "data-default") {
			t.Fatalf("the DM's level reads:\n%s", html)
		}
	})

	t.Run("a thread of its own offers Follow and Mute, and Rename only to who may rename it", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.notify.subscription = func(id kernel.ID) (notify.Subscription, error) {
			return notify.Subscription{ThreadID: id, Level: notify.LevelAll}, nil
		}
		var tv pages.ThreadView
		if err := f.c.withNotify(&request{r: httptest.NewRequest(http.MethodGet, "/", nil)}, &tv, f.own, f.ch); err != nil {
			t.Fatal(err)
		}
		html := renderThread(t, tv)
		for _, want := range []string{`data-testid="thread-follow"`, `data-testid="thread-unfollow"`, `data-testid="thread-mute"`,
			"You follow this thread", `data-testid="thread-title-form"`, `value="Plans"`} {
			if !strings.Contains(html, want) {
				t.Fatalf("the header lacks %q:\n%s", want, html)
			}
		}
		if strings.Contains(html, `data-testid="notify-level"`) || strings.Contains(html, `data-testid="thread-follow-on"`) {
			t.Fatal("a followed thread offers the channel's level or Follow")
		}
		f.denied[chat.ActThreadUpdate] = kernel.Errorf(kernel.CodeForbidden, "no")
		tv = pages.ThreadView{}
		if err := f.c.withNotify(&request{r: httptest.NewRequest(http.MethodGet, "/", nil)}, &tv, f.own, f.ch); err != nil {
			t.Fatal(err)
		}
		if tv.Notify.Rename != nil || strings.Contains(renderThread(t, tv), "thread-title-form") {
			t.Fatal("one who may not rename the thread is offered Rename")
		}
	})

	t.Run("a muted thread offers Unmute and Follow", func(t *testing.T) {
		html := renderThread(t, pages.ThreadView{Notify: &pages.NotifyView{Follow: &pages.FollowView{ThreadID: "t", Level: "none"}}})
		if !strings.Contains(html, `data-testid="thread-unmute"`) || !strings.Contains(html, `data-testid="thread-follow-on"`) || strings.Contains(html, `data-testid="thread-mute"`) {
			t.Fatalf("a muted thread's controls:\n%s", html)
		}
	})
}

func TestNotifyForms(t *testing.T) {
	t.Run("a level is stored and the channel comes back with what it now is", func(t *testing.T) {
		f := newNotifyFixture(t)
		var got string
		f.notify.setLevel = func(id kernel.ID, l string) (notify.ChannelLevel, error) {
			got = l
			lv, err := notify.ParseLevel(l)
			return notify.ChannelLevel{ChannelID: id, Level: lv}, err
		}
		w := f.post(t, f.c.setChannelLevel, f.ch.ID, url.Values{"level": {"all"}})
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/channels/"+string(f.ch.ID) || got != "all" {
			t.Fatalf("answered %d to %q, stored %q", w.Code, w.Header().Get("Location"), got)
		}
		if fl := flashOf(t, w); fl.Kind != "ok" || !strings.Contains(fl.Text, "every message") {
			t.Fatalf("flash %+v", fl)
		}
	})

	t.Run("an unknown level comes back as an error flash", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.notify.setLevel = func(id kernel.ID, l string) (notify.ChannelLevel, error) {
			_, err := notify.ParseLevel(l)
			return notify.ChannelLevel{}, err
		}
		w := f.post(t, f.c.setChannelLevel, f.ch.ID, url.Values{"level": {"loud"}})
		if fl := flashOf(t, w); w.Code != http.StatusSeeOther || fl.Kind != "error" || !strings.Contains(fl.Text, "all, mentions or none") {
			t.Fatalf("answered %d with flash %+v", w.Code, fl)
		}
	})

	t.Run("following a thread goes back to it and says so", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.notify.setSubscription = func(id kernel.ID, l string) (notify.Subscription, error) {
			return notify.Subscription{ThreadID: id, Level: notify.Level(l)}, nil
		}
		w := f.post(t, f.c.setThreadSubscription, f.own.ID, url.Values{"level": {"none"}})
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/threads/"+string(f.own.ID) {
			t.Fatalf("answered %d to %q", w.Code, w.Header().Get("Location"))
		}
		if fl := flashOf(t, w); !strings.Contains(fl.Text, "muted") {
			t.Fatalf("flash %+v", fl)
		}
	})

	t.Run("a subscription posted for a main thread goes back to the channel with the reason", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.notify.setSubscription = func(kernel.ID, string) (notify.Subscription, error) {
			return notify.Subscription{}, kernel.Errorf(chat.CodeMainThread, "main")
		}
		w := f.post(t, f.c.setThreadSubscription, f.main.ID, url.Values{"level": {"all"}})
		if fl := flashOf(t, w); w.Header().Get("Location") != "/console/channels/"+string(f.ch.ID) || fl.Kind != "error" {
			t.Fatalf("answered %d to %q with %+v", w.Code, w.Header().Get("Location"), fl)
		}
	})

	t.Run("a rename sends the title, and an empty one clears it", func(t *testing.T) {
		f := newNotifyFixture(t)
		var titles []string
		f.threads.update = func(id kernel.ID, p chat.ThreadPatch) (chat.Thread, error) {
			if p.Title == nil {
				t.Fatal("the patch has no title")
			}
			titles = append(titles, *p.Title)
			return f.own, nil
		}
		for _, title := range []string{"Launch plans", ""} {
			w := f.post(t, f.c.renameThread, f.own.ID, url.Values{"title": {title}})
			if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/console/threads/"+string(f.own.ID) {
				t.Fatalf("answered %d to %q", w.Code, w.Header().Get("Location"))
			}
		}
		if len(titles) != 2 || titles[0] != "Launch plans" || titles[1] != "" {
			t.Fatalf("titles %q", titles)
		}
	})

	t.Run("a reader who may not rename the thread is told so with 403", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.threads.update = func(kernel.ID, chat.ThreadPatch) (chat.Thread, error) {
			return chat.Thread{}, kernel.Errorf(kernel.CodeForbidden, "no")
		}
		w := f.post(t, f.c.renameThread, f.own.ID, url.Values{"title": {"Mine now"}})
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "may rename it") {
			t.Fatalf("answered %d: %.300s", w.Code, w.Body.String())
		}
	})

	t.Run("one who may not read the thread gets the 404 of a thread that does not exist", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.denied[chat.ActThreadRead] = kernel.Errorf(kernel.CodeForbidden, "no")
		f.threads.update = func(kernel.ID, chat.ThreadPatch) (chat.Thread, error) {
			return chat.Thread{}, kernel.Errorf(kernel.CodeForbidden, "no")
		}
		if w := f.post(t, f.c.renameThread, f.own.ID, url.Values{"title": {"x"}}); w.Code != http.StatusNotFound {
			t.Fatalf("answered %d", w.Code)
		}
	})

	t.Run("a title the use case refuses comes back as an error flash", func(t *testing.T) {
		f := newNotifyFixture(t)
		f.threads.update = func(kernel.ID, chat.ThreadPatch) (chat.Thread, error) {
			return chat.Thread{}, kernel.Invalid("title", "title is too long")
		}
		w := f.post(t, f.c.renameThread, f.own.ID, url.Values{"title": {"x"}})
		if fl := flashOf(t, w); w.Code != http.StatusSeeOther || fl.Kind != "error" || fl.Text != "title is too long" {
			t.Fatalf("answered %d with %+v", w.Code, fl)
		}
	})
}
