package components

import "strconv"

// ActionButtonView is a one-button form.
type ActionButtonView struct {
	Action string // the path it posts to
	CSRF   string
	Label  string
	// Class is the button's class: "" (primary), "quiet" or "danger".
	Class  string
	TestID string
	// Title is the button's tooltip, which says what happens; may be empty.
	Title  string
	Fields []Field // hidden fields besides csrf_token
}

// Field is a hidden form field.
type Field struct{ Name, Value string }

func colspan(n int) string { return strconv.Itoa(n) }
