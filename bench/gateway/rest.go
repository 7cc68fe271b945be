package gatewaybench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	httpbench "bothy.dev/bothy/bench/http"
)

// Password is the password of every account Prepare creates.
const Password = "bench horse battery staple"

// Layout is the instance Prepare makes: channels (each with its main thread) and people, each
// granted on each channel what Grant says.
type Layout struct {
	Channels int
	People   int
	// Grant is the level of person p on channel c: "view", "post", or "" for none. Nil grants
	// post everywhere.
	Grant func(p, c int) string
}

// Instance is a prepared server: whom to connect as and where to post.
type Instance struct {
	// Base is the public origin, such as http://127.0.0.1:41234.
	Base string
	// Owner is the owner's session token: the owner may post in every channel.
	Owner string
	// Tokens are the people's session tokens, in the order of Layout's p.
	Tokens []string
	// Threads are the channels' main threads, in the order of Layout's c; ChannelIDs their
	// channels.
	Threads, ChannelIDs []string
}

// prepareWorkers is how many people Prepare creates and logs in at once: each costs two
// argon2id hashes (the password set, the login), which the server runs GOMAXPROCS at a time.
const prepareWorkers = 4

// Prepare redeems the setup code for an owner, creates a space with the channels and the
// people of l, grants, and logs everyone in, over the REST API of base.
func Prepare(ctx context.Context, c *http.Client, base, setupCode string, l Layout) (Instance, error) {
	in := Instance{Base: base}
	var ids struct {
		ID           string `json:"id"`
		MainThreadID string `json:"main_thread_id"`
		Token        string `json:"token"`
	}
	if err := httpbench.Call(ctx, c, base, "", "/api/v1/setup", map[string]string{"code": setupCode, "handle": "owner", "display_name": "Owner", "password": Password}, nil); err != nil {
		return in, err
	}
	if err := httpbench.Call(ctx, c, base, "", "/api/v1/auth/login", map[string]string{"handle": "owner", "password": Password}, &ids); err != nil {
		return in, err
	}
	in.Owner = ids.Token
	if err := httpbench.Call(ctx, c, base, in.Owner, "/api/v1/spaces", map[string]string{"name": "Bench"}, &ids); err != nil {
		return in, err
	}
	space := ids.ID
	for i := range max(1, l.Channels) {
		if err := httpbench.Call(ctx, c, base, in.Owner, "/api/v1/spaces/"+space+"/channels", map[string]string{"name": fmt.Sprintf("bench-%d", i)}, &ids); err != nil {
			return in, err
		}
		in.ChannelIDs = append(in.ChannelIDs, ids.ID)
		in.Threads = append(in.Threads, ids.MainThreadID)
	}
	grant := l.Grant
	if grant == nil {
		grant = func(int, int) string { return "post" }
	}
	in.Tokens = make([]string, l.People)
	errs := make([]error, l.People)
	next := make(chan int)
	var wg sync.WaitGroup
	for range prepareWorkers {
		wg.Go(func() {
			for p := range next {
				in.Tokens[p], errs[p] = preparePerson(ctx, c, base, in.Owner, p, in.ChannelIDs, grant)
			}
		})
	}
	for p := range l.People {
		next <- p
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return in, err
		}
	}
	return in, nil
}

// preparePerson creates person p, grants it its levels and logs it in.
func preparePerson(ctx context.Context, c *http.Client, base, owner string, p int, channels []string, grant func(p, c int) string) (string, error) {
	var ids struct {
		ID    string `json:"id"`
		Token string `json:"token"`
	}
	handle := fmt.Sprintf("person%d", p)
	if err := httpbench.Call(ctx, c, base, owner, "/api/v1/users", map[string]string{"handle": handle, "display_name": "Person " + strconv.Itoa(p), "password": Password}, &ids); err != nil {
		return "", err
	}
	person := ids.ID
	for ci, ch := range channels {
		if level := grant(p, ci); level != "" {
			if err := httpbench.Call(ctx, c, base, owner, "/api/v1/channels/"+ch+"/grants", map[string]string{"principal_id": person, "level": level}, nil); err != nil {
				return "", err
			}
		}
	}
	if err := httpbench.Call(ctx, c, base, "", "/api/v1/auth/login", map[string]string{"handle": handle, "password": Password}, &ids); err != nil {
		return "", err
	}
	return ids.Token, nil
}
