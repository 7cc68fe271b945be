package pages

import (
	"bothy.dev/bothy/ui/components"
	"bothy.dev/bothy/ui/layouts"
)

// OverviewView is the owner's overview of the instance: what runs, since when, on what, how
// much it holds and how busy the last day was.
type OverviewView struct {
	Chrome   layouts.Chrome
	Instance string
	Version  string
	Engine   string
	Uptime   string
	// Database is the size on disk ("12.5 MiB"); DatabaseDetail says what it counts
	// ("database 12.0 MiB + WAL 512 KiB"). Both empty when the stats are not wired.
	Database       string
	DatabaseDetail string
	Counts         []CountView
	// Chart is the activity of the last 24 hours; nil when the stats are not wired.
	Chart *components.BarChartView
	// ActivityTotal sums the chart ("42 messages and 3 runs in the last 24 hours").
	ActivityTotal string
	// Backup is the line of the last scheduled backup; nil when backups are not scheduled.
	Backup *BackupView
}

// CountView is one total of the overview, linked to its page when it has one.
type CountView struct {
	Label  string
	Value  string
	Href   string
	TestID string
}

// PeopleView is the owner's list of people, with the form to add one.
type PeopleView struct {
	Chrome layouts.Chrome
	People []PersonRow
	// NextHref is the link to the next page of people; "" on the last page.
	NextHref string
	// Form is what the add form shows: the values of a refused form and why it was refused.
	Form NewPersonForm
}

// PersonRow is one person.
type PersonRow struct {
	ID, Handle, DisplayName string
	IsOwner, Active         bool
	// Self: the signed-in owner's own row, which offers no disable and no reset (an owner
	// changes their own password elsewhere, and does not lock themselves out here).
	Self    bool
	Created string
}

// NewPersonForm is the add form's state.
type NewPersonForm struct {
	Handle, DisplayName string
	Error               string
}

// TokensView is the signed-in person's API tokens.
type TokensView struct {
	Chrome layouts.Chrome
	Tokens []TokenRow
	// Created is the token made by the last form, shown this once; nil otherwise.
	Created *CreatedToken
	// Name and Error are a refused create form's value and reason.
	Name  string
	Error string
}

// TokenRow is one live token, never its value.
type TokenRow struct {
	ID, Name, Created, LastUsed string
}

// CreatedToken is a new token's name and value.
type CreatedToken struct {
	Name, Value string
}

// SettingsView is the owner's settings of the instance.
type SettingsView struct {
	Chrome layouts.Chrome
	Name   string
	// BroadcastMentions is who may use @here and @channel: "post" or "manage".
	BroadcastMentions string
	Error             string
}

// BackupView is the overview's line of the last scheduled backup: When ("3 hours ago",
// "never"), At its UTC time, Detail its size and result or its error, and Result "completed",
// "failed" or "none".
type BackupView struct {
	When, At, Detail, Result string
}
