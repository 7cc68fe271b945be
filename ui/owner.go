package ui

import (
	"net/http"
	"time"

	"bothy.dev/bothy/ui/pages"
)

// ownerRoutes registers the owner's pages.
func (c *Console) ownerRoutes() {}

// overview is the owner's start page: what runs, since when, on what.
func (c *Console) overview(rq *request) error {
	v := pages.OverviewView{Chrome: c.chrome(rq, "Overview", "overview"), Version: c.d.Version, Engine: c.d.Engine,
		Uptime: c.d.Clock.Now().Sub(c.d.Started).Truncate(time.Second).String()}
	return c.render(rq, http.StatusOK, pages.Overview(v))
}
