package components

// ComponentRowView is one row of a message's buttons and selects.
type ComponentRowView struct {
	Components []ComponentView
}

// ComponentView is a button (Label, Style) or a select (Placeholder, Options, Min, Max) of a
// message, as the chat view shows it; a disabled one shows greyed out and takes no click.
type ComponentView struct {
	Type, ID           string
	Label, Style       string
	Placeholder        string
	Options            []OptionView
	Min, Max           int
	Disabled, Multiple bool
}

// OptionView is one choice of a select.
type OptionView struct {
	Label, Value string
}
