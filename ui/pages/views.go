// Package pages holds the console's pages: templ components that take plain view structs (this
// file and the views next to each page), never a domain service, and render them into the frame
// of package layouts. What a page may show and do is decided by the handlers in package ui.
package pages

import "bothy.dev/bothy/ui/layouts"

// SetupView is the setup page of the first owner, opened from the printed setup link.
type SetupView struct {
	Chrome layouts.Chrome
	// Code is the setup code of the link, carried in a hidden field.
	Code string
	// Handle and DisplayName are what the person typed, kept after a refused form.
	Handle, DisplayName string
	// Error says why the last form was refused; "" when none.
	Error string
	// Done: the setup is complete already; the page says so instead of showing the form and
	// points to the sign-in, or to the console when SignedIn.
	Done, SignedIn bool
	// NoCode: the page was opened without the code of a setup link; it says where the link is.
	NoCode bool
}

// SignInView is the sign-in page.
type SignInView struct {
	Chrome layouts.Chrome
	Handle string
	// Next is the console path to go to after signing in.
	Next  string
	Error string
	// NoOwner: the instance has no owner yet, so nobody can sign in; the page says where the
	// setup link is.
	NoOwner bool
}

// ErrorView is a page that says something went wrong: 404 for what does not exist or may not be
// seen (the same page, as the API answers the same 404), 403 for a form without its CSRF token.
type ErrorView struct {
	Chrome layouts.Chrome
	Status int
	Title  string
	Detail string
}

// AccountView is the signed-in person's own page.
type AccountView struct {
	Chrome              layouts.Chrome
	Handle, DisplayName string
	IsOwner             bool
	Error               string
	// Push lists the person's browsers that get notifications; nil leaves the section out.
	Push *PushView
}
