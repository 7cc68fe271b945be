package authz

import (
	"context"
	"slices"

	"bothy.dev/bothy/app/kernel"
)

// ChannelMembers lists the people who may read a channel: the active people holding at least
// view on it by a grant on the channel, on its space (not for a DM) or by being an owner (not
// for a DM), in id order. Agents and apps are no members. It reads the warm cache only, as of
// the last event it observed (the message that mentions @here or @channel writes a mention per
// member in its Unit of Work, and must not scan the grants table to do it); a channel the cache
// does not know has no members. Errors: internal while the cache is not warm or stale.
func (s *Service) ChannelMembers(_ context.Context, channelID kernel.ID) ([]kernel.ID, error) {
	c := s.cache
	c.mu.RLock()
	defer c.mu.RUnlock()
	m := c.m
	if m == nil || c.stale {
		return nil, errCold
	}
	ch, known := m.channels[channelID]
	if !known {
		return []kernel.ID{}, nil
	}
	out := []kernel.ID{}
	for id, p := range m.principals {
		if !p.known || !p.active || !p.person {
			continue
		}
		member := p.channels[channelID].level >= LevelView
		if !ch.dm {
			member = member || p.owner || p.spaces[ch.space] >= LevelView
		}
		if member {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out, nil
}
