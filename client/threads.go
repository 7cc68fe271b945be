package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// MessagePage is one page of a thread's messages, in id order (oldest first).
type MessagePage struct {
	Items []Message `json:"items"`
	// HasMore says whether more messages lie beyond the page in the direction it was read.
	HasMore bool `json:"has_more"`
}

// ThreadMessages reads one page of a thread's messages: with before empty the newest, else
// those just older than the message before; limit 0 is the server's default (50, at most 200).
func (c *Client) ThreadMessages(ctx context.Context, threadID, before string, limit int) (MessagePage, error) {
	q := url.Values{}
	if before != "" {
		q.Set("before", before)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/api/v1/threads/" + url.PathEscape(threadID) + "/messages"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p MessagePage
	err := c.do(ctx, http.MethodGet, path, nil, &p)
	return p, err
}

// Users lists the instance's principals (people, agents and apps), to name the authors of
// messages.
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var l struct {
		Items []User `json:"items"`
	}
	err := c.do(ctx, http.MethodGet, "/api/v1/users", nil, &l)
	return l.Items, err
}
