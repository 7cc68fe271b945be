package agentsbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	gatewaybench "bothy.dev/bothy/bench/gateway"
	httpbench "bothy.dev/bothy/bench/http"
	"bothy.dev/bothy/bench/internal/measure"
)

// Approval is an approval run: one person at a time mentions the agent, the agent starts the
// run and asks for approval (POST /api/v1/runs/{id}/approvals), the person decides it
// (POST /api/v1/approvals/{id}/decide), and the agent's consumer reads approval.decided; then the
// agent finishes the run. Closed loop, one approval after the other.
type Approval struct {
	Warmup, Duration time.Duration
	// Wait bounds each step: the invocation after the mention, the decision after the decide.
	Wait time.Duration
}

// Approved is what an approval run measured: the decide's POST (from just before it was sent)
// to the agent's reading of approval.decided on its gateway consumer, and the decide's answer.
type Approved struct {
	Latency, Decide measure.Latencies
	Approvals       int
}

// RunApproval runs cfg against in with agent a, which must hold post on in's first thread's
// channel; the person of in.Tokens[0], who must hold invoke there, mentions it and decides.
func RunApproval(ctx context.Context, c *http.Client, in gatewaybench.Instance, a Agent, cfg Approval) (Approved, error) {
	if len(in.Tokens) == 0 || len(in.Threads) == 0 {
		return Approved{}, errors.New("agentsbench: an approval run needs a person and a thread")
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 10 * time.Second
	}
	person, thread := in.Tokens[0], in.Threads[0]
	invs := make(chan invocation, 16)
	type seen struct {
		id string
		at time.Time
	}
	decided := make(chan seen, 16)
	onEvent := func(typ, data []byte, at time.Time) error {
		if string(typ) != "approval.decided" {
			return nil
		}
		var d struct {
			ID    string `json:"id"`
			State string `json:"state"`
		}
		if err := json.Unmarshal(data, &d); err != nil || d.ID == "" {
			return fmt.Errorf("approval.decided without an id (%v): %.300s", err, data)
		}
		if d.State != "approved" {
			return fmt.Errorf("approval %s is %s, not approved", d.ID, d.State)
		}
		select {
		case decided <- seen{d.ID, at}:
			return nil
		default:
			return fmt.Errorf("approval.decided %s while another waits", d.ID)
		}
	}
	k, err := connectConsumerWith(ctx, in.Base, a.Token, func(inv invocation) error {
		select {
		case invs <- inv:
			return nil
		default:
			return fmt.Errorf("agent.invocation %d while another waits", inv.Seq)
		}
	}, onEvent)
	if err != nil {
		return Approved{}, err
	}
	defer k.stop()

	var lat, dec []time.Duration
	start := time.Now()
	measuredFrom, end := start.Add(cfg.Warmup), start.Add(cfg.Warmup+cfg.Duration)
	for i := 0; time.Now().Before(end); i++ {
		if err := k.failed(); err != nil {
			return Approved{}, err
		}
		var m struct {
			ID string `json:"id"`
		}
		if err := httpbench.Call(ctx, c, in.Base, person, "/api/v1/threads/"+thread+"/messages",
			map[string]string{"content": "@" + a.Handle + " may I? " + strconv.Itoa(i)}, &m); err != nil {
			return Approved{}, fmt.Errorf("mention %d: %w", i, err)
		}
		var inv invocation
		select {
		case inv = <-invs:
		case <-time.After(cfg.Wait):
			return Approved{}, fmt.Errorf("mention %d: no agent.invocation within %s", i, cfg.Wait)
		case <-ctx.Done():
			return Approved{}, ctx.Err()
		}
		if inv.MessageID != m.ID {
			return Approved{}, fmt.Errorf("mention %d: the invocation is for message %s, not %s", i, inv.MessageID, m.ID)
		}
		run := in.Base + "/api/v1/runs/" + inv.RunID
		if err := agentCall(ctx, c, http.MethodPost, run+"/start", a.Token, inv.Token, nil); err != nil {
			return Approved{}, fmt.Errorf("start %d: %w", i, err)
		}
		ap, err := requestApproval(ctx, c, run+"/approvals", a.Token, inv.Token)
		if err != nil {
			return Approved{}, fmt.Errorf("request %d: %w", i, err)
		}
		sent := time.Now()
		var got struct {
			State string `json:"state"`
		}
		if err := httpbench.Call(ctx, c, in.Base, person, "/api/v1/approvals/"+ap+"/decide",
			map[string]string{"decision": "approve", "scope": "once"}, &got); err != nil || got.State != "approved" {
			return Approved{}, fmt.Errorf("decide %d: %v (%s)", i, err, got.State)
		}
		answered := time.Now()
		var d seen
		select {
		case d = <-decided:
		case <-time.After(cfg.Wait):
			return Approved{}, fmt.Errorf("approval %s: no approval.decided at the agent within %s", ap, cfg.Wait)
		case <-ctx.Done():
			return Approved{}, ctx.Err()
		}
		if d.id != ap {
			return Approved{}, fmt.Errorf("approval.decided for %s, waiting for %s", d.id, ap)
		}
		if !sent.Before(measuredFrom) {
			lat = append(lat, d.at.Sub(sent))
			dec = append(dec, answered.Sub(sent))
		}
		if err := agentCall(ctx, c, http.MethodPost, run+"/finish", a.Token, inv.Token, []byte(`{"outcome":"succeeded"}`)); err != nil {
			return Approved{}, fmt.Errorf("finish %d: %w", i, err)
		}
	}
	if len(lat) == 0 {
		return Approved{}, errors.New("agentsbench: no approval was measured")
	}
	return Approved{Latency: measure.Summarise(lat), Decide: measure.Summarise(dec), Approvals: len(lat)}, nil
}

// requestApproval is the agent's request; any answer but 201 pending is an error.
func requestApproval(ctx context.Context, c *http.Client, url, token, invocationToken string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"title":"go on","detail":"the benchmark asks","timeout_s":600}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Invocation-Token", invocationToken)
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var ap struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("answered %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&ap); err != nil || ap.ID == "" || ap.State != "pending" {
		return "", fmt.Errorf("answered %+v (%v)", ap, err)
	}
	return ap.ID, nil
}
