package ui

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/stats"
	"bothy.dev/bothy/ui/components"
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

// OverviewStats is what the overview reads besides the console's own facts: the counts, the
// activity of the last day and the database size (*stats.Service).
type OverviewStats interface {
	Overview(ctx context.Context, actor kernel.Actor) (stats.Overview, error)
}

// overview is the owner's start page: what runs, since when, on what, what it holds and how
// busy it was.
func (c *Console) overview(rq *request) error {
	ch := c.chrome(rq, "Overview", "overview")
	v := pages.OverviewView{Chrome: ch, Instance: instanceTitle(ch.Instance), Version: c.d.Version, Engine: engineName(c.d.Engine),
		Uptime: fmtUptime(c.d.Clock.Now().Sub(c.d.Started))}
	if c.d.Stats != nil {
		ov, err := c.d.Stats.Overview(rq.ctx(), rq.actor)
		if err != nil {
			return err
		}
		fillOverview(&v, ov)
	}
	if c.d.Backups != nil {
		v.Backup = backupLine(c.d.Backups, c.d.Clock.Now())
	}
	return c.render(rq, http.StatusOK, pages.Overview(v))
}

// fillOverview turns the numbers into what the page shows.
func fillOverview(v *pages.OverviewView, ov stats.Overview) {
	v.Database = fmtBytes(ov.Database.Bytes + ov.Database.WAL)
	if ov.Database.Engine == "sqlite" {
		v.DatabaseDetail = "database " + fmtBytes(ov.Database.Bytes) + " + WAL " + fmtBytes(ov.Database.WAL)
	} else {
		v.DatabaseDetail = "pg_database_size"
	}
	n := ov.Counts
	v.Counts = []pages.CountView{
		{Label: "People", Value: fmtCount(n.People), Href: "/console/people", TestID: "count-people"},
		{Label: "Agents", Value: fmtCount(n.Agents), Href: "/console/agents", TestID: "count-agents"},
		{Label: "Spaces", Value: fmtCount(n.Spaces), Href: "/console/spaces", TestID: "count-spaces"},
		{Label: "Channels", Value: fmtCount(n.Channels), TestID: "count-channels"},
		{Label: "Messages", Value: fmtCount(n.Messages), TestID: "count-messages"},
		{Label: "Runs", Value: fmtCount(n.Runs), TestID: "count-runs"},
	}
	chart, msgs, runs := activityChart(ov.Hours)
	v.Chart = &chart
	v.ActivityTotal = fmt.Sprintf("%s %s and %s %s in the last 24 hours.", fmtCount(msgs), plural(msgs, "message"), fmtCount(runs), plural(runs, "run"))
}

// activityChart is the chart of messages and runs per hour, labelled in UTC like the times the
// instance stores, and the totals it shows.
func activityChart(hours []stats.Hour) (components.BarChartView, int64, int64) {
	var msgs, runs int64
	points := make([]components.ChartPoint, 0, len(hours))
	for _, h := range hours {
		msgs += h.Messages
		runs += h.Runs
		points = append(points, components.ChartPoint{Label: h.Start.UTC().Format("15:04"), Values: []int64{h.Messages, h.Runs}})
	}
	series := []components.ChartSeries{{Name: "Messages", Class: "series-messages"}, {Name: "Runs", Class: "series-runs"}}
	v := components.NewBarChart("Messages and runs per hour over the last 24 hours (UTC)", 480, 160, series,
		[]string{"message", "run"}, points, 6)
	return v, msgs, runs
}

func instanceTitle(name string) string {
	if name == "" {
		return "bothy"
	}
	return name
}

func engineName(driver string) string {
	switch driver {
	case "sqlite":
		return "SQLite"
	case "postgres":
		return "PostgreSQL"
	}
	return driver
}

// fmtUptime is a duration as a person reads it: "45s", "12m", "3h 12m", "2d 3h".
func fmtUptime(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// fmtBytes is a size in binary units with one decimal: "512 B", "1.5 KiB", "12.0 MiB".
func fmtBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	f, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if f < 1024 {
			break
		}
		f, unit = f/1024, u
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + unit
}

// fmtCount groups thousands with a thin space: 12 345.
func fmtCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 || len(s) <= 4 {
		return s
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, "\u202f"...)
		}
		out = append(out, s[i])
	}
	return string(out)
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// fmtDate is a stored time as the tables show it, in UTC.
func fmtDate(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") }
