// Package ui is the web console: server-rendered pages under /console/ for the
// owner (the instance, its people, spaces, agents and settings) and a chat view for anyone signed
// in. Its handlers call the same use cases as the REST API, with the signed-in person as the
// actor, so every change goes through the same Authorize. Pages are templ components (packages
// layouts, pages, components) that take plain view structs; templ lives here and nowhere else.
//
// Every page works without JavaScript: forms post, the handler redirects with a flash message
// (post/redirect/get), and the script in assets only adds the live parts. It must not hold
// domain rules or SQL.
package ui

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/authz"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/assets"
	"bothy.dev/bothy/ui/layouts"
	"bothy.dev/bothy/ui/pages"
)

// Deps are the use cases the console calls and what its overview shows. Identity is required;
// a page whose service is nil answers 404.
type Deps struct {
	Identity IdentityUseCases
	Chat     ChatUseCases
	Messages MessageUseCases
	Agents   AgentUseCases
	Runs     RunUseCases
	Authz    AccessUseCases
	Logger   *slog.Logger
	Clock    kernel.Clock

	// PublicURL is the instance's public URL; when it is https the cookies are Secure.
	PublicURL string
	// Version, Engine and Started are shown on the overview.
	Version string
	Engine  string
	Started time.Time
	// Instance names the instance in every page's frame and serves the settings page; Stats
	// feeds the overview's counts and chart (owner.go, owner_settings.go). Nil leaves them out.
	Instance InstanceSettings
	Stats    OverviewStats
	// Backups is the last scheduled backup the overview shows (owner_backup.go); nil leaves it out.
	Backups BackupStatus
	// SpaceGrants, AgentRuns and AgentsSeen are the reads of the access and agents pages
	// (owner_spaces.go, owner_agents.go); nil leaves that part of the page out.
	SpaceGrants SpaceGrants
	AgentRuns   AgentRuns
	AgentsSeen  AgentsSeen
	// Reactions reads the reactions under the chat view's messages (chat.go); nil shows none.
	Reactions ReactionSource
	// Interactions posts the clicks on a message's buttons and selects (chat_components.go);
	// nil refuses them.
	Interactions InteractionUseCases
	// DMs lists and starts the person's direct messages in the chat view (chat_dms.go); nil
	// leaves them out.
	DMs DMUseCases
	// Inbox feeds the chat view's unread counts, "new messages" line and Mentions page, and
	// moves the read position a shown thread reaches (chat_inbox.go); nil leaves them out.
	Inbox InboxUseCases
	// Notify and Threads serve the thread header's notification level, Follow and Mute, and
	// the rename of a thread (chat_notify.go); Push the account page's notifications on a
	// device (account_push.go). Nil leaves them out.
	Notify  NotifyUseCases
	Threads ThreadTitles
	Push    PushUseCases
	// LogHead is the event log's head, which the chat view's script identifies from (chat.go);
	// nil: the script starts at the head it connects at.
	LogHead LogHead
	// Approvals shows what runs ask people on their run cards and the Approvals page
	// (chat_approvals.go); nil leaves them out.
	Approvals ApprovalUseCases
	// Budgets serves the budget on an agent's page and the slash commands the composer lists
	// (agent_budget.go); nil leaves them out.
	Budgets BudgetUseCases
	// Search serves the search page the top bar's box leads to (search.go); nil answers it
	// 404.
	Search SearchUseCases
}

// IdentityUseCases is what the sign-in, account, people and token pages and the session call;
// *identity.Service implements it.
type IdentityUseCases interface {
	SetupComplete(ctx context.Context) (bool, error)
	Setup(ctx context.Context, code, handle, displayName, password string) (identity.User, error)
	Login(ctx context.Context, handle, password, clientIP string) (identity.LoginResult, error)
	Logout(ctx context.Context, actor kernel.Actor) error
	Authenticate(ctx context.Context, bearer string) (kernel.Actor, error)
	Me(ctx context.Context, actor kernel.Actor) (identity.User, error)
	ChangePassword(ctx context.Context, actor kernel.Actor, current, password string) error
	ListUsers(ctx context.Context, actor kernel.Actor, after kernel.ID, limit int) ([]identity.User, error)
	CreateUser(ctx context.Context, actor kernel.Actor, handle, displayName, password string) (identity.User, error)
	DisableUser(ctx context.Context, actor kernel.Actor, id kernel.ID) (identity.User, error)
	EnableUser(ctx context.Context, actor kernel.Actor, id kernel.ID) (identity.User, error)
	ResetPassword(ctx context.Context, actor kernel.Actor, id kernel.ID, password string) (identity.User, error)
	ListTokens(ctx context.Context, actor kernel.Actor) ([]identity.Token, error)
	CreateToken(ctx context.Context, actor kernel.Actor, name string) (identity.Token, string, error)
	RevokeToken(ctx context.Context, actor kernel.Actor, id kernel.ID) error
}

var _ IdentityUseCases = (*identity.Service)(nil)

// ChatUseCases is what the chat view and the owner's spaces pages call on spaces, channels and
// threads; *chat.Service implements it.
type ChatUseCases interface {
	ListSpaces(ctx context.Context, actor kernel.Actor) ([]chat.Space, error)
	GetSpace(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Space, error)
	CreateSpace(ctx context.Context, actor kernel.Actor, name string) (chat.Space, error)
	UpdateSpace(ctx context.Context, actor kernel.Actor, id kernel.ID, p chat.SpacePatch) (chat.Space, error)
	ArchiveSpace(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Space, error)
	ListChannels(ctx context.Context, actor kernel.Actor, spaceID kernel.ID) ([]chat.Channel, error)
	GetChannel(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Channel, error)
	CreateChannel(ctx context.Context, actor kernel.Actor, spaceID kernel.ID, in chat.NewChannel) (chat.Channel, error)
	UpdateChannel(ctx context.Context, actor kernel.Actor, id kernel.ID, p chat.ChannelPatch) (chat.Channel, error)
	ArchiveChannel(ctx context.Context, actor kernel.Actor, id kernel.ID) (chat.Channel, error)
	SetOperator(ctx context.Context, actor kernel.Actor, channelID, agentID kernel.ID) (chat.Channel, error)
	ClearOperator(ctx context.Context, actor kernel.Actor, channelID kernel.ID) (chat.Channel, error)
	ListThreads(ctx context.Context, actor kernel.Actor, channelID kernel.ID, p chat.Page) ([]chat.Thread, bool, error)
	Thread(ctx context.Context, id kernel.ID) (chat.Thread, error)
	ThreadRef(ctx context.Context, id kernel.ID) (chat.Thread, error)
}

var _ ChatUseCases = (*chat.Service)(nil)

// MessageUseCases is what the chat view calls on messages and reactions; *messaging.Service
// implements it.
type MessageUseCases interface {
	ListMessages(ctx context.Context, actor kernel.Actor, threadID kernel.ID, p chat.Page) ([]messaging.Message, bool, error)
	GetMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (messaging.Message, error)
	CreateThread(ctx context.Context, actor kernel.Actor, channelID kernel.ID, in messaging.NewThread) (chat.Thread, messaging.Message, bool, error)
	CreateMessage(ctx context.Context, actor kernel.Actor, threadID kernel.ID, in messaging.NewMessage) (messaging.Message, bool, error)
	Reply(ctx context.Context, actor kernel.Actor, messageID kernel.ID, in messaging.NewReply) (chat.Thread, messaging.Message, bool, error)
	EditMessage(ctx context.Context, actor kernel.Actor, id kernel.ID, content string) (messaging.Message, error)
	DeleteMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) error
	AddReaction(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string) error
	RemoveReaction(ctx context.Context, actor kernel.Actor, id kernel.ID, emoji string) error
	PinMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (messaging.Pin, bool, error)
	UnpinMessage(ctx context.Context, actor kernel.Actor, id kernel.ID) (bool, error)
	ListPins(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]messaging.PinnedMessage, error)
}

var _ MessageUseCases = (*messaging.Service)(nil)

// AgentUseCases is what the owner's agents pages and the chat view's directory call;
// *agents.Service implements it.
type AgentUseCases interface {
	List(ctx context.Context, actor kernel.Actor, p chat.Page) ([]agents.Agent, bool, error)
	Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (agents.Agent, error)
	Create(ctx context.Context, actor kernel.Actor, in agents.NewAgent) (agents.Agent, string, error)
	Disable(ctx context.Context, actor kernel.Actor, id kernel.ID) (agents.Agent, error)
	Enable(ctx context.Context, actor kernel.Actor, id kernel.ID) (agents.Agent, error)
	ResetToken(ctx context.Context, actor kernel.Actor, id kernel.ID) (agents.Agent, string, error)
}

var _ AgentUseCases = (*agents.Service)(nil)

// RunUseCases is what the chat view calls on runs; *runs.Service implements it.
type RunUseCases interface {
	ListThread(ctx context.Context, actor kernel.Actor, threadID kernel.ID, p chat.Page) ([]runs.Run, bool, error)
	Get(ctx context.Context, actor kernel.Actor, id kernel.ID) (runs.Run, error)
	Cancel(ctx context.Context, actor kernel.Actor, id kernel.ID) (runs.Run, error)
}

var _ RunUseCases = (*runs.Service)(nil)

// AccessUseCases is what the pages call to check a right and to read and change a channel's
// or a space's grants; *authz.Service implements it.
type AccessUseCases interface {
	Authorize(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) error
	ListGrants(ctx context.Context, actor kernel.Actor, channelID kernel.ID) ([]authz.Grant, error)
	CreateGrant(ctx context.Context, actor kernel.Actor, channelID, principalID kernel.ID, level authz.Level) (authz.Grant, bool, error)
	RevokeGrant(ctx context.Context, actor kernel.Actor, channelID, principalID kernel.ID) error
	CreateSpaceGrant(ctx context.Context, actor kernel.Actor, spaceID, principalID kernel.ID, level authz.Level) (authz.Grant, bool, error)
	RevokeSpaceGrant(ctx context.Context, actor kernel.Actor, spaceID, principalID kernel.ID) error
}

var _ AccessUseCases = (*authz.Service)(nil)

// Console serves the console's pages.
type Console struct {
	d      Deps
	mux    *http.ServeMux
	secure bool // cookies only over https
}

// Prefix is where the console lives.
const Prefix = "/console/"

// New builds the console.
func New(d Deps) *Console {
	if d.Identity == nil {
		panic("ui: New needs Identity")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = kernel.SystemClock{}
	}
	c := &Console{d: d, mux: http.NewServeMux(), secure: strings.HasPrefix(d.PublicURL, "https://")}
	c.routes()
	return c
}

// ServeHTTP runs the console's chain: the security headers, the session and its CSRF token,
// then the page.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Strict: only this origin's scripts, styles and connections; no inline script or style,
	// no frames, forms post only here.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; manifest-src 'self'; worker-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

// handle registers a page. auth says who may reach it: anyone, a signed-in person, or the owner.
func (c *Console) handle(pattern string, who access, h pageHandler) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		rq, ok := c.begin(w, r, who)
		if !ok {
			return
		}
		if err := h(rq); err != nil {
			c.fail(rq, err)
		}
	})
}

type access int

const (
	anyone access = iota
	signedIn
	ownerOnly
)

// pageHandler serves one page; an error it returns becomes the error page (fail).
type pageHandler func(rq *request) error

// request is one request to the console with what the chain found out.
type request struct {
	w     http.ResponseWriter
	r     *http.Request
	actor kernel.Actor // the zero actor when signed out
	user  *identity.User
	csrf  string
	flash layouts.Flash
}

func (rq *request) ctx() context.Context { return rq.r.Context() }

// chrome is the frame of a page of this request.
func (c *Console) chrome(rq *request, title, section string) layouts.Chrome {
	ch := layouts.Chrome{Title: title, Section: section, CSRF: rq.csrf, Flash: rq.flash}
	if c.d.Instance != nil {
		// One indexed read of one row; a failure only leaves the default name in the frame.
		if name, err := c.d.Instance.Name(rq.ctx()); err == nil {
			ch.Instance = name
		}
	}
	if rq.user != nil {
		ch.User = &layouts.User{Handle: rq.user.Handle, DisplayName: rq.user.DisplayName, IsOwner: rq.user.IsOwner}
	}
	return ch
}

// begin runs the chain before a page: the session, the CSRF token (bound to the session, or
// before sign-in to the pre-session cookie), the form check of a POST and the page's access
// rule. It answers by itself and returns false when the page must not run.
func (c *Console) begin(w http.ResponseWriter, r *http.Request, who access) (*request, bool) {
	rq := &request{w: w, r: r}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			c.errorPage(rq, http.StatusBadRequest, "The form could not be read", "It was too large or malformed.")
			return nil, false
		}
	}
	if tok := c.sessionCookie(r); tok != "" {
		actor, err := c.d.Identity.Authenticate(r.Context(), tok)
		switch {
		case err == nil && actor.Kind == kernel.KindPerson:
			u, err := c.d.Identity.Me(r.Context(), actor)
			if err != nil {
				c.fail(rq, err)
				return nil, false
			}
			rq.actor, rq.user = actor, &u
			rq.csrf = sessionCSRF(tok)
		case err == nil || kernel.IsCode(err, kernel.CodeUnauthenticated):
			c.clearSession(w) // expired, revoked, or not a person's session
		default:
			c.fail(rq, err)
			return nil, false
		}
	}
	if rq.user == nil {
		rq.csrf = c.preSessionCSRF(w, r)
	}
	// A form for signed-in people that arrives without a session changes nothing either way:
	// it goes to the sign-in below rather than to a page that says the form expired.
	lostSession := who >= signedIn && rq.user == nil
	if r.Method == http.MethodPost && !lostSession && !validCSRF(rq.csrf, csrfOf(r)) {
		c.errorPage(rq, http.StatusForbidden, "The form has expired", "Reload the page and send the form again.")
		return nil, false
	}
	rq.flash = c.takeFlash(w, r)
	switch {
	case lostSession:
		next := r.URL.Path
		if r.Method != http.MethodGet {
			next = Prefix
		}
		c.redirect(rq, "/console/signin?next="+url.QueryEscape(next), layouts.Flash{})
		return nil, false
	case who == ownerOnly && !rq.user.IsOwner:
		c.notFound(rq)
		return nil, false
	}
	return rq, true
}

// maxFormBytes bounds a form; the largest is a message of the chat view.
const maxFormBytes = 256 << 10

// render writes a page into a buffer first, so that a failing component never leaves half a
// page behind a 200.
func (c *Console) render(rq *request, status int, page templ.Component) error {
	var buf bytes.Buffer
	if err := page.Render(rq.ctx(), &buf); err != nil {
		return err
	}
	h := rq.w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Vary", "Accept-Encoding")
	body := buf.Bytes()
	if len(body) >= gzipMin && assets.AcceptsGzip(rq.r) {
		// A thread page is mostly markup that repeats: gzip at its fastest takes it to about
		// a fifth, for some tens of microseconds.
		zw := gzipWriters.Get().(*gzip.Writer)
		var zbuf bytes.Buffer
		zw.Reset(&zbuf)
		_, _ = zw.Write(body)
		_ = zw.Close()
		gzipWriters.Put(zw)
		body = zbuf.Bytes()
		h.Set("Content-Encoding", "gzip")
	}
	rq.w.WriteHeader(status)
	_, _ = rq.w.Write(body)
	return nil
}

// gzipMin is the smallest page worth compressing: below it the header costs what gzip saves.
const gzipMin = 1400

var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// redirect ends a form with 303 to target, carrying f to the next page.
func (c *Console) redirect(rq *request, target string, f layouts.Flash) {
	if f.Text != "" {
		c.setFlash(rq.w, f)
	}
	http.Redirect(rq.w, rq.r, target, http.StatusSeeOther)
}

// fail answers err: not found and forbidden as the one 404 page (what may not be seen does
// not exist), a lost session as the sign-in, anything else as a 500 page with its correlation
// in the log.
func (c *Console) fail(rq *request, err error) {
	switch kernel.CodeOf(err) {
	case kernel.CodeNotFound, kernel.CodeForbidden:
		c.notFound(rq)
	case kernel.CodeUnauthenticated:
		c.clearSession(rq.w)
		c.redirect(rq, "/console/signin", layouts.Flash{})
	default:
		if errors.Is(err, context.Canceled) {
			return
		}
		c.d.Logger.Error("console", "path", rq.r.URL.Path, "err", err)
		c.errorPage(rq, http.StatusInternalServerError, "Something went wrong", "The server could not show this page. The log says why.")
	}
}

func (c *Console) notFound(rq *request) {
	c.errorPage(rq, http.StatusNotFound, "Not found", "There is nothing here, or you may not see it.")
}

func (c *Console) errorPage(rq *request, status int, title, detail string) {
	v := pages.ErrorView{Chrome: c.chrome(rq, title, ""), Status: status, Title: title, Detail: detail}
	if err := c.render(rq, status, pages.Error(v)); err != nil {
		http.Error(rq.w, title, status)
	}
}

// refusal reports whether err carries one of codes: a refusal the page itself tells the
// person about (the form again with the reason, or an error flash), where any other error goes
// to the error page (fail). Nil is no refusal. Each handler names its codes, because the same
// code is the person's to fix in one form and a failure in another.
func refusal(err error, codes ...kernel.Code) bool {
	return err != nil && slices.Contains(codes, kernel.CodeOf(err))
}

// formError is the message a refused form shows: the use case's own words for what the person
// can fix, a plain sentence for the rest.
func formError(err error) string {
	var ke *kernel.Error
	if errors.As(err, &ke) {
		switch ke.Code {
		case kernel.CodeValidation, kernel.CodeConflict, identity.CodeLastOwner, kernel.CodeRateLimited, identity.CodeSetupComplete,
			files.CodeAttachmentInvalid:
			return ke.Message
		}
	}
	return "That did not work. Try again."
}
