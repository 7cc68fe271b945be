package ui

import (
	"context"
	"sort"
	"sync"
	"time"

	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
)

// principalInfo is what the chat view shows of an author: handle, name, whether an agent.
type principalInfo struct {
	ID      kernel.ID
	Handle  string
	Name    string
	Agent   bool
	Active  bool
	IsOwner bool
}

// principalDir is a snapshot of the instance's people and agents. It is never changed after it
// is built, so a page reads it without a lock.
type principalDir struct {
	byID   map[kernel.ID]principalInfo
	sorted []principalInfo // by handle
	at     time.Time
}

// get is the principal id, or a stand-in for one the snapshot does not know (created a moment
// ago on another node, say).
func (d *principalDir) get(id kernel.ID) principalInfo {
	if p, ok := d.byID[id]; ok {
		return p
	}
	return principalInfo{ID: id, Handle: "unknown", Name: "Someone"}
}

// How long the chat view keeps its snapshot of the people and agents (a new agent is offered
// to the composer's completion after at most that), and how soon it reads them again when a
// page names someone it does not know. The reads are cheap next to a page, and at most one per
// interval runs for the whole console.
const (
	dirMaxAge  = 2 * time.Second
	dirMissAge = 250 * time.Millisecond
)

// dirCache holds the console's snapshot. Both reads it is made of (identity's people, agents)
// are open to every signed-in person, so one snapshot serves them all.
type dirCache struct {
	mu  sync.Mutex
	dir *principalDir
}

// directory returns a snapshot that knows the principals of need if they exist, reading the
// people and agents again when the snapshot is old, or misses one of need and is not brand new.
func (c *chatView) directory(ctx context.Context, actor kernel.Actor, need []kernel.ID) (*principalDir, error) {
	c.dirs.mu.Lock()
	defer c.dirs.mu.Unlock()
	now := c.d.Clock.Now()
	d := c.dirs.dir
	if d != nil && now.Sub(d.at) < dirMaxAge {
		missing := false
		for _, id := range need {
			if _, ok := d.byID[id]; !ok {
				missing = true
				break
			}
		}
		if !missing || now.Sub(d.at) < dirMissAge {
			return d, nil
		}
	}
	d, err := c.loadDirectory(ctx, actor)
	if err != nil {
		return nil, err
	}
	d.at = now
	c.dirs.dir = d
	return d, nil
}

func (c *chatView) loadDirectory(ctx context.Context, actor kernel.Actor) (*principalDir, error) {
	d := &principalDir{byID: map[kernel.ID]principalInfo{}}
	var after kernel.ID
	for range 1000 {
		users, err := c.d.Identity.ListUsers(ctx, actor, after, 500)
		if err != nil {
			return nil, err
		}
		for _, u := range users {
			d.byID[u.ID] = principalInfo{ID: u.ID, Handle: u.Handle, Name: u.DisplayName, Agent: u.Kind == kernel.KindAgent,
				Active: u.Status == "active", IsOwner: u.IsOwner}
		}
		if len(users) < 500 {
			break
		}
		after = users[len(users)-1].ID
	}
	if c.d.Agents != nil {
		p := chat.Page{Limit: chat.MaxPageLimit}
		for range 1000 {
			list, more, err := c.d.Agents.List(ctx, actor, p)
			if err != nil {
				return nil, err
			}
			for _, a := range list {
				d.byID[a.ID] = principalInfo{ID: a.ID, Handle: a.Handle, Name: a.DisplayName, Agent: true, Active: a.Status == "active"}
			}
			if !more || len(list) == 0 {
				break
			}
			p.After = list[len(list)-1].ID
		}
	}
	for _, p := range d.byID {
		d.sorted = append(d.sorted, p)
	}
	sort.Slice(d.sorted, func(i, j int) bool { return d.sorted[i].Handle < d.sorted[j].Handle })
	return d, nil
}

// maxMembers bounds the handles the composer completes.
const maxMembers = 500

// members are the active people and agents who may read ch, by handle: whom a mention there
// reaches, and who may type there. Authorize decides, from its warm cache.
func (c *chatView) members(ctx context.Context, ch chat.Channel, d *principalDir) []principalInfo {
	if c.d.Authz == nil {
		return nil
	}
	var out []principalInfo
	for _, p := range d.sorted {
		if !p.Active {
			continue
		}
		kind := kernel.KindPerson
		if p.Agent {
			kind = kernel.KindAgent
		}
		a := kernel.Actor{ID: p.ID, Kind: kind, Handle: p.Handle, IsOwner: p.IsOwner}
		if c.d.Authz.Authorize(ctx, a, chat.ActChannelRead, ch.Resource()) == nil {
			out = append(out, p)
			if len(out) == maxMembers {
				break
			}
		}
	}
	return out
}
