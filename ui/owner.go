package ui

import (
	"net/http"
	"time"

	"bothy.dev/bothy/ui/pages"
)

// ownerRoutes registers the owner's pages, one file per area.
func (c *Console) ownerRoutes() {
	c.peopleRoutes()   // owner_people.go
	c.spaceRoutes()    // owner_spaces.go: spaces, channels, access
	c.agentRoutes()    // owner_agents.go
	c.tokenRoutes()    // owner_tokens.go (every signed-in person's own tokens)
	c.settingsRoutes() // owner_settings.go
}

// overview is the owner's start page: what runs, since when, on what.
func (c *Console) overview(rq *request) error {
	v := pages.OverviewView{Chrome: c.chrome(rq, "Overview", "overview"), Version: c.d.Version, Engine: c.d.Engine,
		Uptime: c.d.Clock.Now().Sub(c.d.Started).Truncate(time.Second).String()}
	return c.render(rq, http.StatusOK, pages.Overview(v))
}
