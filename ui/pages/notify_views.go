package pages

// NotifyView is what the header of a thread offers about notifications: on a channel's (or a
// DM's) main thread the person's level for it; on any other thread whether they follow it, and
// the rename form for who may rename it. Every part is a plain form that posts and comes back.
type NotifyView struct {
	CSRF string
	// Level is the person's level for the channel; nil on a thread of its own.
	Level *LevelView
	// Follow is the person's level for the thread; nil on a main thread.
	Follow *FollowView
	// Rename is the form of the thread's title, for its creator or a manager of the channel;
	// nil for anyone else.
	Rename *RenameView
}

// LevelView is a person's notification level for a channel or a DM.
type LevelView struct {
	ChannelID string
	// Level is all, mentions or none; Default is true when the person never chose one, and
	// DefaultLevel is what they get then (all in a DM, mentions in a channel).
	Level        string
	Default      bool
	DefaultLevel string
}

// NotifyOption is one choice of the level's select.
type NotifyOption struct {
	Value, Label string
}

// Options are the three levels as the select offers them, the default named as such.
func (l LevelView) Options() []NotifyOption {
	out := []NotifyOption{{"all", "All messages"}, {"mentions", "Mentions only"}, {"none", "Nothing"}}
	for i := range out {
		if out[i].Value == l.DefaultLevel {
			out[i].Label += " (default)"
		}
	}
	return out
}

// Summary says in words what the person hears of the channel now.
func (l LevelView) Summary() string {
	s := map[string]string{"all": "Notified of every message", "mentions": "Notified of mentions only",
		"none": "Not notified"}[l.Level]
	if l.Default {
		s += " (the default)"
	}
	return s
}

// FollowView is a person's level for a thread: all is following it, none is muting it.
type FollowView struct {
	ThreadID string
	Level    string
	Default  bool
}

// Summary says in words what the person hears of the thread now.
func (f FollowView) Summary() string {
	switch f.Level {
	case "all":
		return "You follow this thread: every reply notifies you."
	case "none":
		return "You muted this thread: nothing from it notifies you."
	}
	if f.Default {
		return "You do not follow this thread: only mentions notify you."
	}
	return "Only mentions in this thread notify you."
}

// RenameView is the form of a thread's title.
type RenameView struct {
	ThreadID, Title string
}

// PushView is the account page's "Notifications on this device": the person's registered
// browsers.
type PushView struct {
	Devices []PushDevice
}

// PushDevice is one registered browser: its push service's host, when it was registered,
// whether its notifications show previews, and why the last one did not arrive, if it did not.
type PushDevice struct {
	ID, Host, Endpoint string
	Created, Stamp     string
	Previews           bool
	LastError          string
}
