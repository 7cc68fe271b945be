package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel"
)

// IdentityUseCases is what the identity routes call; *identity.Service implements it.
type IdentityUseCases interface {
	Setup(ctx context.Context, code, handle, displayName, password string) (identity.User, error)
	Login(ctx context.Context, handle, password, clientIP string) (identity.LoginResult, error)
	Logout(ctx context.Context, actor kernel.Actor) error
	Me(ctx context.Context, actor kernel.Actor) (identity.User, error)
	CreateUser(ctx context.Context, actor kernel.Actor, handle, displayName, password string) (identity.User, error)
	ListUsers(ctx context.Context, actor kernel.Actor, after kernel.ID, limit int) ([]identity.User, error)
	DisableUser(ctx context.Context, actor kernel.Actor, id kernel.ID) (identity.User, error)
	EnableUser(ctx context.Context, actor kernel.Actor, id kernel.ID) (identity.User, error)
	ResetPassword(ctx context.Context, actor kernel.Actor, id kernel.ID, password string) (identity.User, error)
	ChangePassword(ctx context.Context, actor kernel.Actor, current, password string) error
	CreateToken(ctx context.Context, actor kernel.Actor, name string) (identity.Token, string, error)
	ListTokens(ctx context.Context, actor kernel.Actor) ([]identity.Token, error)
	RevokeToken(ctx context.Context, actor kernel.Actor, id kernel.ID) error
}

var _ IdentityUseCases = (*identity.Service)(nil)

// userView is a principal as the API shows it.
type userView struct {
	ID          kernel.ID            `json:"id"`
	Handle      string               `json:"handle"`
	DisplayName string               `json:"display_name"`
	Kind        kernel.PrincipalKind `json:"kind"`
	Status      string               `json:"status"`
	IsOwner     bool                 `json:"is_owner"`
	CreatedAt   time.Time            `json:"created_at"`
}

func viewUser(u identity.User) userView {
	return userView{ID: u.ID, Handle: u.Handle, DisplayName: u.DisplayName, Kind: u.Kind, Status: u.Status,
		IsOwner: u.IsOwner, CreatedAt: u.CreatedAt.UTC()}
}

// tokenView lists a token: never its value. last_used_at is null until the first use.
type tokenView struct {
	ID         kernel.ID  `json:"id"`
	Name       string     `json:"name"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

func viewToken(t identity.Token) tokenView {
	v := tokenView{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt.UTC()}
	if t.LastUsedAt != nil {
		u := t.LastUsedAt.UTC()
		v.LastUsedAt = &u
	}
	return v
}

type createdTokenView struct {
	ID        kernel.ID `json:"id"`
	Name      string    `json:"name"`
	Token     string    `json:"token"`
	CreatedAt time.Time `json:"created_at"`
}

type sessionView struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	User      userView  `json:"user"`
}

// IdentityRoutes serves setup, login and logout, the caller, people and the caller's API tokens.
// The handlers never log a body: it may hold a password.
func IdentityRoutes(svc IdentityUseCases) []Route {
	rt := identityRoutes{svc: svc}
	return []Route{
		{Method: http.MethodPost, Pattern: "/api/v1/setup", Action: identity.ActInstanceBootstrap, Public: true, Handler: withBody(rt.setup)},
		{Method: http.MethodPost, Pattern: "/api/v1/auth/login", Action: identity.ActLogin, Public: true, Handler: withBody(rt.login)},
		{Method: http.MethodPost, Pattern: "/api/v1/auth/logout", Action: identity.ActLogout, Handler: rt.logout},
		{Method: http.MethodGet, Pattern: "/api/v1/me", Action: identity.ActSelfRead, Handler: rt.me},
		// A person changes their own password with the current one; their other sessions end.
		// The body holds passwords: like every handler here, it is never logged.
		{Method: http.MethodPost, Pattern: "/api/v1/me/password", Action: identity.ActSelfPassword, Password: true, Handler: withBody(rt.changePassword)},
		{Method: http.MethodPost, Pattern: "/api/v1/users", Action: identity.ActUserCreate, Password: true, Handler: withBody(rt.createUser)},
		// GET /users takes the optional keyset ?after=<id>&limit=<n> (default 500, the maximum).
		{Method: http.MethodGet, Pattern: "/api/v1/users", Action: identity.ActUserRead, Handler: rt.listUsers},
		{Method: http.MethodPost, Pattern: "/api/v1/users/{id}/disable", Action: identity.ActUserDisable, Handler: withID(rt.disableUser)},
		{Method: http.MethodPost, Pattern: "/api/v1/users/{id}/enable", Action: identity.ActUserEnable, Handler: withID(rt.enableUser)},
		// An owner sets a person's password; the person's sessions end. The body holds a
		// password: like every handler here, it is never logged.
		{Method: http.MethodPost, Pattern: "/api/v1/users/{id}/password", Action: identity.ActUserPasswordReset, Password: true, Handler: withIDBody(rt.resetPassword)},
		{Method: http.MethodPost, Pattern: "/api/v1/tokens", Action: identity.ActTokenCreate, Secret: true, Handler: withBody(rt.createToken)},
		{Method: http.MethodGet, Pattern: "/api/v1/tokens", Action: identity.ActTokenList, Handler: rt.listTokens},
		{Method: http.MethodDelete, Pattern: "/api/v1/tokens/{id}", Action: identity.ActTokenRevoke, Handler: withID(rt.revokeToken)},
	}
}

// identityRoutes holds the handlers of IdentityRoutes.
type identityRoutes struct{ svc IdentityUseCases }

type setupBody struct {
	Code        string `json:"code"`
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
	Password    string `json:"password"`
}

type loginBody struct {
	Handle   string `json:"handle"`
	Password string `json:"password"`
}

type passwordChangeBody struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

type userBody struct {
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
	Password    string `json:"password"`
}

type passwordBody struct {
	Password string `json:"password"`
}

type tokenBody struct {
	Name string `json:"name"`
}

// userAnswer answers u as the API shows a person, with status, or the error.
func userAnswer(status int, u identity.User, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return status, viewUser(u), nil
}

func (rt identityRoutes) setup(r *Request, in setupBody) (int, any, error) {
	u, err := rt.svc.Setup(r.Context(), in.Code, in.Handle, in.DisplayName, in.Password)
	return userAnswer(http.StatusCreated, u, err)
}

func (rt identityRoutes) login(r *Request, in loginBody) (int, any, error) {
	res, err := rt.svc.Login(r.Context(), in.Handle, in.Password, r.ClientIP)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, sessionView{Token: res.Token, ExpiresAt: res.ExpiresAt.UTC(), User: viewUser(res.User)}, nil
}

func (rt identityRoutes) logout(r *Request) (int, any, error) {
	return noContent(rt.svc.Logout(r.Context(), r.Actor))
}

func (rt identityRoutes) me(r *Request) (int, any, error) {
	u, err := rt.svc.Me(r.Context(), r.Actor)
	return userAnswer(http.StatusOK, u, err)
}

func (rt identityRoutes) changePassword(r *Request, in passwordChangeBody) (int, any, error) {
	return noContent(rt.svc.ChangePassword(r.Context(), r.Actor, in.CurrentPassword, in.NewPassword))
}

func (rt identityRoutes) createUser(r *Request, in userBody) (int, any, error) {
	u, err := rt.svc.CreateUser(r.Context(), r.Actor, in.Handle, in.DisplayName, in.Password)
	return userAnswer(http.StatusCreated, u, err)
}

func (rt identityRoutes) listUsers(r *Request) (int, any, error) {
	after, limit, err := usersPage(r)
	if err != nil {
		return 0, nil, err
	}
	return listViews(viewUser)(rt.svc.ListUsers(r.Context(), r.Actor, after, limit))
}

func (rt identityRoutes) disableUser(r *Request, id kernel.ID) (int, any, error) {
	u, err := rt.svc.DisableUser(r.Context(), r.Actor, id)
	return userAnswer(http.StatusOK, u, err)
}

func (rt identityRoutes) enableUser(r *Request, id kernel.ID) (int, any, error) {
	u, err := rt.svc.EnableUser(r.Context(), r.Actor, id)
	return userAnswer(http.StatusOK, u, err)
}

func (rt identityRoutes) resetPassword(r *Request, id kernel.ID, in passwordBody) (int, any, error) {
	u, err := rt.svc.ResetPassword(r.Context(), r.Actor, id, in.Password)
	return userAnswer(http.StatusOK, u, err)
}

func (rt identityRoutes) createToken(r *Request, in tokenBody) (int, any, error) {
	t, value, err := rt.svc.CreateToken(r.Context(), r.Actor, in.Name)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, createdTokenView{ID: t.ID, Name: t.Name, Token: value, CreatedAt: t.CreatedAt.UTC()}, nil
}

func (rt identityRoutes) listTokens(r *Request) (int, any, error) {
	return listViews(viewToken)(rt.svc.ListTokens(r.Context(), r.Actor))
}

func (rt identityRoutes) revokeToken(r *Request, id kernel.ID) (int, any, error) {
	return noContent(rt.svc.RevokeToken(r.Context(), r.Actor, id))
}

func usersPage(r *Request) (kernel.ID, int, error) {
	q := r.URL.Query()
	var after kernel.ID
	if v := q.Get("after"); v != "" {
		id, err := kernel.ParseID(v)
		if err != nil {
			return "", 0, &kernel.Error{Code: kernel.CodeCursorInvalid, Field: "after", Message: "after must be an id"}
		}
		after = id
	}
	limit := 500
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return "", 0, kernel.Invalid("limit", "limit must be an integer from 1 to 500")
		}
		limit = n
	}
	return after, limit, nil
}
