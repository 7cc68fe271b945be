package runs

import (
	"context"
	"slices"
	"strings"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/chat"
	"bothy.dev/bothy/app/kernel"
	"bothy.dev/bothy/app/messaging"
)

// OnMessageDeciding is the trigger, subscribed to messaging.MessageDeciding: inside the Unit of
// Work that posts the message, before the message is stored, it decides which agents the message
// invokes and what its trigger state is (MessageDeciding.Trigger); OnMessagePosted then makes
// their runs, after message.created.
//
// The agents it considers are those it mentions, for the first message of a new thread the
// operator of the channel and, for a person's message in a direct message, the agents taking
// part in it (a DM with an agent is a conversation with it: it answers without being named;
// only a person's message counts, so that two agents in one DM do not invoke each other without
// end); never the author itself (an agent does not invoke itself by naming
// itself or by opening a thread where it operates), and each agent once. An agent is invoked when
//
//   - for a mention: the author holds invoke on the channel (agent.invoke: level invoke or
//     manage, or owner); for the operator of a new thread this is not asked: a manager who
//     names an operator has decided that every new thread there is for it, like a help desk
//     in Slack whose bot answers every question, so whoever may open a thread invokes it;
//   - the agent is active;
//   - the agent may read the channel (channel.read in its own name).
//
// A message that starts with a slash command (ParseCommand) adds the agent that declared it
// (commandTarget: the one /name@handle names, or the only one that may answer); several that
// could, unnamed, invoke nobody for the command: command_ambiguous. A mention's @handle of a
// disabled agent resolves to no mention, but the message still says agent_disabled. Then, for
// every candidate, the agent's budget must not be used up (budget_exhausted) and the message's
// handoff depth (depthOf) must be within runs.max_handoff_depth (handoff_depth_exceeded).
//
// The trigger state is "triggered" when a run was made, else the refusal the author can do most
// about (refusalRank). Besides it, MessageDeciding.Trigger.Agents keeps one entry per agent in
// the order they were considered: its run (named here, made by OnMessagePosted) or its own
// refusal, so that no agent's refusal is hidden behind another's run. A message that concerns
// no agent (it mentions only people, or nobody) keeps none. Messages that mention no one and
// open no thread cost nothing here; others one read for the agents among the mentions.
// Errors: whatever a read fails with; a refusal is not an error.
func (s *Service) OnMessageDeciding(ctx context.Context, ev messaging.MessageDeciding) error {
	m := ev.Message
	var operator kernel.ID
	if ev.NewThread {
		ch, err := s.structure.Channel(ctx, m.ChannelID)
		if err != nil {
			return err
		}
		if ch.OperatorID != nil && *ch.OperatorID != m.AuthorID {
			operator = *ch.OperatorID
		}
	}
	candidates := make([]kernel.ID, 0, len(m.Mentions)+1)
	if !operator.IsZero() {
		candidates = append(candidates, operator)
	}
	for _, id := range m.Mentions {
		if id != m.AuthorID && id != operator {
			candidates = append(candidates, id)
		}
	}
	if m.ChannelKind == chat.KindDM && ev.Author.Kind == kernel.KindPerson && s.dms != nil {
		participants, _, err := s.dms.Participants(ctx, m.ChannelID)
		if err != nil {
			return err
		}
		for _, id := range participants {
			if id != m.AuthorID && !slices.Contains(candidates, id) {
				candidates = append(candidates, id)
			}
		}
	}
	channel := kernel.Resource{Kind: kernel.ResChannel, ID: m.ChannelID, SpaceID: m.SpaceID, ChannelID: m.ChannelID,
		ChannelKind: m.ChannelKind}
	var (
		refused TriggerState
		decided []messaging.AgentTrigger
	)
	refuse := func(id kernel.ID, why TriggerState) {
		refused = worse(refused, why)
		decided = append(decided, messaging.AgentTrigger{AgentID: id, State: string(why)})
	}
	if call, ok := ParseCommand(m.Content); ok {
		target, ambiguous, err := s.commandTarget(ctx, call, m.AuthorID, channel)
		if err != nil {
			return err
		}
		if len(ambiguous) > 0 {
			refused = TriggerCommandAmbiguous
			for _, id := range ambiguous {
				if !slices.Contains(candidates, id) {
					refuse(id, TriggerCommandAmbiguous)
				}
			}
		} else if !target.IsZero() && !slices.Contains(candidates, target) {
			candidates = append(candidates, target)
		}
	}
	if keys := messaging.MentionKeys(m.Content); len(keys) > len(m.Mentions) {
		// A handle that resolved to no mention may be a disabled agent's: the message says so
		// rather than invoke nobody without a word.
		disabled, err := s.agents.DisabledAgents(ctx, keys)
		if err != nil {
			return err
		}
		for _, id := range disabled {
			if !slices.Contains(candidates, id) {
				refuse(id, TriggerAgentDisabled)
			}
		}
	}
	if len(candidates) == 0 {
		*ev.Trigger = messaging.Trigger{State: string(refused), Agents: decided}
		return nil
	}
	statuses, err := s.agents.AgentStatuses(ctx, candidates)
	if err != nil {
		return err
	}
	if len(statuses) == 0 {
		*ev.Trigger = messaging.Trigger{State: string(refused), Agents: decided}
		return nil
	}
	depth, err := s.depthOf(ctx, m)
	if err != nil {
		return err
	}
	now := s.now()
	var (
		invoke                 []kernel.ID
		askedInvoke, mayInvoke bool
	)
	for _, id := range candidates {
		status, isAgent := statuses[id]
		if !isAgent {
			continue
		}
		if id != operator {
			if !askedInvoke {
				if mayInvoke, err = s.allowed(ctx, ev.Author, ActAgentInvoke, channel); err != nil {
					return err
				}
				askedInvoke = true
			}
			if !mayInvoke {
				refuse(id, TriggerNoInvokeRight)
				continue
			}
		}
		if status != agents.StatusActive {
			refuse(id, TriggerAgentDisabled)
			continue
		}
		reads, err := s.allowed(ctx, kernel.Actor{ID: id, Kind: kernel.KindAgent}, chat.ActChannelRead, channel)
		if err != nil {
			return err
		}
		if !reads {
			refuse(id, TriggerAgentCannotRead)
			continue
		}
		if exhausted, err := s.budgetExhausted(ctx, id, now); err != nil {
			return err
		} else if exhausted {
			refuse(id, TriggerBudgetExhausted)
			continue
		}
		if depth > s.maxHandoffDepth {
			refuse(id, TriggerHandoffDepthExceeded)
			continue
		}
		invoke = append(invoke, id)
		run := kernel.NewID() // the run OnMessagePosted makes, named here so that the message shows it
		decided = append(decided, messaging.AgentTrigger{AgentID: id, State: string(TriggerTriggered), RunID: &run})
	}
	state := refused
	if len(invoke) > 0 {
		state = TriggerTriggered
	}
	*ev.Trigger = messaging.Trigger{State: string(state), Invoke: invoke, Agents: decided}
	return nil
}

// OnMessagePosted is subscribed to messaging.MessagePosted: it makes a queued run for each agent
// OnMessageDeciding decided the message invokes (with the id the message's triggers name), with
// the agent's personal agent.invocation and run.state_changed to the thread, after the message's
// message.created. Errors: a store's.
func (s *Service) OnMessagePosted(ctx context.Context, ev messaging.MessagePosted) error {
	for _, id := range ev.Invoke {
		run := kernel.NewID()
		for _, t := range ev.Message.Triggers {
			if t.AgentID == id && t.RunID != nil {
				run = *t.RunID
			}
		}
		if err := s.invoke(ctx, ev.Message, id, run); err != nil {
			return err
		}
	}
	return nil
}

// DMParticipants reads the participants of a direct message; dms implements it.
type DMParticipants interface {
	// Participants returns the participants of the DM channelID; ok is false when it is no DM.
	Participants(ctx context.Context, channelID kernel.ID) (ids []kernel.ID, ok bool, err error)
}

// allowed asks Authorize and reads a refusal (not_found, forbidden, unauthenticated) as false;
// any other error is returned.
func (s *Service) allowed(ctx context.Context, actor kernel.Actor, action kernel.Action, r kernel.Resource) (bool, error) {
	err := s.authz.Authorize(ctx, actor, action, r)
	switch kernel.CodeOf(err) {
	case kernel.Code{}:
		return true, nil
	case kernel.CodeNotFound, kernel.CodeForbidden, kernel.CodeUnauthenticated:
		return false, nil
	}
	return false, err
}

// depthOf is the handoff depth of the runs message m makes: the depth of the run it answers
// plus one (message.run_id, set only for an agent's answer), 0 for any other message.
func (s *Service) depthOf(ctx context.Context, m messaging.Message) (int, error) {
	if m.RunID == nil {
		return 0, nil
	}
	r, err := s.store.RunHead(ctx, *m.RunID)
	if kernel.IsCode(err, kernel.CodeNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return r.Depth + 1, nil
}

// commandFor is the slash command m invokes agent with: m's command when agent declares it and
// the message did not name another agent; nil otherwise.
func (s *Service) commandFor(ctx context.Context, m messaging.Message, agent kernel.ID) (*InvocationCommand, error) {
	call, ok := ParseCommand(m.Content)
	if !ok {
		return nil, nil
	}
	holders, err := s.agents.CommandHolders(ctx, call.Name)
	if err != nil {
		return nil, err
	}
	for _, h := range holders {
		if h.AgentID == agent && (call.Handle == "" || strings.EqualFold(h.Handle, call.Handle)) {
			return &InvocationCommand{Name: call.Name, Args: call.Args}, nil
		}
	}
	return nil, nil
}

// invoke makes the queued run runID of agent for message m and appends agent.invocation to the
// agent and run.state_changed (from nothing to queued) to the thread, in the author's name. It
// enqueues runs.queued_expiry for the run, due agent.queued_timeout after it was made.
func (s *Service) invoke(ctx context.Context, m messaging.Message, agent, runID kernel.ID) error {
	now := s.now()
	trigger := m.ID
	depth, err := s.depthOf(ctx, m)
	if err != nil {
		return err
	}
	cmd, err := s.commandFor(ctx, m, agent)
	if err != nil {
		return err
	}
	r := Run{Summary: Summary{ID: runID, AgentID: agent, ThreadID: m.ThreadID, ChannelID: m.ChannelID,
		SpaceID: m.SpaceID, TriggerMessageID: &trigger, InvokedBy: m.AuthorID, Status: StatusQueued,
		CreatedAt: now, LastActivityAt: now, UpdatedAt: now, Depth: depth}, ChannelKind: m.ChannelKind}
	if err := s.store.CreateRun(ctx, r); err != nil {
		return err
	}
	s.events.Append(ctx, EvAgentInvocation.Event(kernel.Event{Scope: kernel.Scope{PrincipalID: agent}, SubjectID: r.ID,
		ActorID: m.AuthorID}, Invocation{RunID: r.ID, AgentID: agent, ThreadID: r.ThreadID, ChannelID: r.ChannelID,
		SpaceID: r.SpaceID, MessageID: m.ID, InvokedBy: m.AuthorID, Command: cmd, Attachments: m.Attachments}))
	s.logState(ctx, r, nil, m.AuthorID)
	return s.enqueue(ctx, JobQueuedExpiry, r, now.Add(s.queuedTimeout))
}
