// Package layouts is the frame of every console page: the document head with the embedded
// stylesheet and script, the top bar with the navigation, and the flash message. It takes plain
// view structs, never a domain service.
package layouts

// Chrome is what the frame of a page shows around its content.
type Chrome struct {
	Title string
	// User is who is signed in; nil on the setup and sign-in pages.
	User *User
	// Section names the navigation entry to mark as current ("overview", "people", …).
	Section string
	// CSRF is the token every form of the page sends in its hidden csrf_token field.
	CSRF  string
	Flash Flash
	// Instance is the instance's name, shown in the top bar and the title.
	Instance string
	// Search is the query of the search page, which the top bar's search box shows.
	Search string
}

// User is the signed-in person as the frame shows them.
type User struct {
	Handle      string
	DisplayName string
	IsOwner     bool
}

// Flash is the one-time message of the previous action ("Channel created."); Kind is "ok" or
// "error". The zero Flash shows nothing.
type Flash struct {
	Kind string
	Text string
}

// navEntry is one link of the top bar.
type navEntry struct {
	Section, Label, Href string
}

// nav lists the links u may follow: the owner's pages only for an owner.
func nav(u *User) []navEntry {
	if u == nil {
		return nil
	}
	var out []navEntry
	if u.IsOwner {
		out = append(out, navEntry{"overview", "Overview", "/console/"}, navEntry{"people", "People", "/console/people"},
			navEntry{"spaces", "Spaces", "/console/spaces"}, navEntry{"agents", "Agents", "/console/agents"})
	}
	out = append(out, navEntry{"chat", "Chat", "/console/chat"}, navEntry{"tokens", "API tokens", "/console/tokens"})
	if u.IsOwner {
		out = append(out, navEntry{"settings", "Settings", "/console/settings"})
	}
	return out
}

func title(c Chrome) string {
	name := c.Instance
	if name == "" {
		name = "bothy"
	}
	if c.Title == "" {
		return name
	}
	return c.Title + " · " + name
}

func instanceName(c Chrome) string {
	if c.Instance == "" {
		return "bothy"
	}
	return c.Instance
}
