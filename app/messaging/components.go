package messaging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
)

// Interactive components: the buttons and selects an agent or app puts under its message, for
// people to answer with a click or a pick instead of typing. They are part of the message (its
// JSON, message.created and message.updated, the messages.components column); what a person does
// with them is an interaction, which runs records and delivers to the message's author.
//
// The layout is Discord's: a message carries up to MaxComponentRows action rows, each an object
// {"components": [...]} of up to MaxRowComponents components. An object per row, rather than a
// bare list, leaves room for what a row may carry later without changing the shape, and it is the
// form bot developers know from Discord's action rows (Slack's actions blocks are objects too).

// Limits of components.
const (
	MaxComponentRows      = 5
	MaxRowComponents      = 5
	MaxComponentIDBytes   = 100
	MaxComponentLabel     = 80 // characters
	MaxComponentValue     = 100
	MaxSelectOptions      = 25
	MaxSelectPlaceholder  = 150 // characters
	ComponentButton       = "button"
	ComponentSelect       = "select"
	ButtonPrimary         = "primary"
	ButtonSecondary       = "secondary"
	ButtonDanger          = "danger"
	defaultButtonStyle    = ButtonSecondary
	defaultSelectMinPicks = 1
	defaultSelectMaxPicks = 1
)

// ActionRow is one row of a message's components, shown side by side.
type ActionRow struct {
	Components []Component `json:"components"`
}

// Component is a button or a select. A button has Label, Style and Value (what an interaction
// with it sends, may be empty); a select has Placeholder, Options and the number of picks
// Min..Max. ID names the component in its message (unique there) and in its interactions.
// Disabled shows it greyed out and refuses interactions with it.
type Component struct {
	Type        string         `json:"type"`
	ID          string         `json:"id"`
	Label       string         `json:"label,omitempty"`
	Style       string         `json:"style,omitempty"`
	Value       string         `json:"value,omitempty"`
	Placeholder string         `json:"placeholder,omitempty"`
	Options     []SelectOption `json:"options,omitempty"`
	Min         *int           `json:"min,omitempty"`
	Max         *int           `json:"max,omitempty"`
	Disabled    bool           `json:"disabled"`
}

// SelectOption is one choice of a select: Label is shown, Value is sent.
type SelectOption struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Find returns the component of rows with id.
func Find(rows []ActionRow, id string) (Component, bool) {
	for _, r := range rows {
		for _, c := range r.Components {
			if c.ID == id {
				return c, true
			}
		}
	}
	return Component{}, false
}

// NormalizeComponents checks rows and fills the defaults (a button's style secondary, a
// select's min and max 1), answering what is stored; no rows is nil (none). Each refusal names
// its field: components[1].components[0].label. Errors: validation_failed.
func NormalizeComponents(rows []ActionRow) ([]ActionRow, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	if len(rows) > MaxComponentRows {
		return nil, kernel.Invalid("components", "a message carries at most %d rows of components", MaxComponentRows)
	}
	ids := map[string]bool{}
	out := make([]ActionRow, len(rows))
	for i, r := range rows {
		field := fmt.Sprintf("components[%d].components", i)
		if len(r.Components) == 0 || len(r.Components) > MaxRowComponents {
			return nil, kernel.Invalid(field, "a row holds 1 to %d components", MaxRowComponents)
		}
		out[i].Components = make([]Component, len(r.Components))
		for j, c := range r.Components {
			f := fmt.Sprintf("%s[%d]", field, j)
			if err := checkComponentText(f+".id", c.ID, MaxComponentIDBytes, false, true); err != nil {
				return nil, err
			}
			if ids[c.ID] {
				return nil, kernel.Invalid(f+".id", "component id %q is used twice in the message", c.ID)
			}
			ids[c.ID] = true
			var err error
			switch c.Type {
			case ComponentButton:
				c, err = normalizeButton(f, c)
			case ComponentSelect:
				c, err = normalizeSelect(f, c)
			default:
				err = kernel.Invalid(f+".type", "type must be button or select")
			}
			if err != nil {
				return nil, err
			}
			out[i].Components[j] = c
		}
	}
	return out, nil
}

func normalizeButton(f string, c Component) (Component, error) {
	if c.Placeholder != "" || c.Options != nil || c.Min != nil || c.Max != nil {
		return c, kernel.Invalid(f, "a button takes no placeholder, options, min or max")
	}
	if err := checkComponentText(f+".label", c.Label, MaxComponentLabel, true, true); err != nil {
		return c, err
	}
	if err := checkComponentText(f+".value", c.Value, MaxComponentValue, false, false); err != nil {
		return c, err
	}
	switch c.Style {
	case "":
		c.Style = defaultButtonStyle
	case ButtonPrimary, ButtonSecondary, ButtonDanger:
	default:
		return c, kernel.Invalid(f+".style", "style must be primary, secondary or danger")
	}
	return c, nil
}

func normalizeSelect(f string, c Component) (Component, error) {
	if c.Label != "" || c.Style != "" || c.Value != "" {
		return c, kernel.Invalid(f, "a select takes no label, style or value: its options have them")
	}
	if err := checkComponentText(f+".placeholder", c.Placeholder, MaxSelectPlaceholder, true, false); err != nil {
		return c, err
	}
	if len(c.Options) == 0 || len(c.Options) > MaxSelectOptions {
		return c, kernel.Invalid(f+".options", "a select has 1 to %d options", MaxSelectOptions)
	}
	values := map[string]bool{}
	for k, o := range c.Options {
		of := fmt.Sprintf("%s.options[%d]", f, k)
		if err := checkComponentText(of+".label", o.Label, MaxComponentLabel, true, true); err != nil {
			return c, err
		}
		if err := checkComponentText(of+".value", o.Value, MaxComponentValue, false, true); err != nil {
			return c, err
		}
		if values[o.Value] {
			return c, kernel.Invalid(of+".value", "option value %q is used twice in the select", o.Value)
		}
		values[o.Value] = true
	}
	lo, hi := defaultSelectMinPicks, defaultSelectMaxPicks
	if c.Min != nil {
		lo = *c.Min
	}
	if c.Max != nil {
		hi = *c.Max
	} else if lo > hi {
		hi = lo
	}
	switch {
	case lo < 0 || lo > len(c.Options):
		return c, kernel.Invalid(f+".min", "min must be between 0 and the number of options (%d)", len(c.Options))
	case hi < 1 || hi > len(c.Options):
		return c, kernel.Invalid(f+".max", "max must be between 1 and the number of options (%d)", len(c.Options))
	case lo > hi:
		return c, kernel.Invalid(f+".min", "min must not be above max")
	}
	c.Min, c.Max = &lo, &hi
	c.Options = append([]SelectOption(nil), c.Options...)
	return c, nil
}

// checkComponentText checks one text of a component: valid UTF-8 without control characters,
// at most limit bytes (or characters when chars), and not empty when required.
func checkComponentText(field, s string, limit int, chars, required bool) error {
	switch {
	case s == "" && required:
		return kernel.Invalid(field, "%s must not be empty", field)
	case !utf8.ValidString(s):
		return kernel.Invalid(field, "%s is not valid UTF-8", field)
	case chars && utf8.RuneCountInString(s) > limit:
		return kernel.Invalid(field, "%s must be at most %d characters", field, limit)
	case !chars && len(s) > limit:
		return kernel.Invalid(field, "%s must be at most %d bytes", field, limit)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return kernel.Invalid(field, "%s must not contain control characters", field)
		}
	}
	return nil
}

// CheckPicks checks the values of an interaction with c and answers them as they are recorded:
// a button sends none or its value (recorded as its value, or none when it has none); a select
// sends one value per pick, between its min and max, each one of its options, none twice.
// Errors: validation_failed (field values).
func CheckPicks(c Component, values []string) ([]string, error) {
	switch c.Type {
	case ComponentButton:
		if len(values) > 1 || len(values) == 1 && values[0] != c.Value {
			return nil, kernel.Invalid("values", "a button sends no values or its own value")
		}
		if c.Value == "" {
			return []string{}, nil
		}
		return []string{c.Value}, nil
	case ComponentSelect:
		lo, hi := defaultSelectMinPicks, defaultSelectMaxPicks
		if c.Min != nil {
			lo = *c.Min
		}
		if c.Max != nil {
			hi = *c.Max
		}
		if len(values) < lo || len(values) > hi {
			return nil, kernel.Invalid("values", "pick between %d and %d options", lo, hi)
		}
		seen := map[string]bool{}
		for i, v := range values {
			known := false
			for _, o := range c.Options {
				known = known || o.Value == v
			}
			if !known {
				return nil, kernel.Invalid(fmt.Sprintf("values[%d]", i), "%q is not an option of the select", v)
			}
			if seen[v] {
				return nil, kernel.Invalid(fmt.Sprintf("values[%d]", i), "%q is picked twice", v)
			}
			seen[v] = true
		}
		return append([]string{}, values...), nil
	}
	return nil, kernel.Invalid("component_id", "the component takes no interaction")
}

// CodeComponentsNotAllowed refuses components on a person's message: components ask people
// to answer an agent or an app, so only those post them (HTTP 403).
var CodeComponentsNotAllowed = kernel.NewCode("components_not_allowed", kernel.ClassForbidden)

// checkComponentsAuthor refuses components from anyone but an agent or an app.
func checkComponentsAuthor(actor kernel.Actor, rows []ActionRow) error {
	if len(rows) > 0 && actor.Kind != kernel.KindAgent && actor.Kind != kernel.KindApp {
		return kernel.Errorf(CodeComponentsNotAllowed, "a person's message may not carry components; agents and apps post them")
	}
	return nil
}

// sameComponents reports whether a and b show the same components.
func sameComponents(a, b []ActionRow) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

// checkedComponents are the components actor may put on a new message, normalized: none for a
// person (components_not_allowed when a person sends some). Errors: components_not_allowed,
// validation_failed naming the field.
func checkedComponents(actor kernel.Actor, rows []ActionRow) ([]ActionRow, error) {
	if err := checkComponentsAuthor(actor, rows); err != nil {
		return nil, err
	}
	return NormalizeComponents(rows)
}
