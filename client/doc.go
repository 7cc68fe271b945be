// Package client is the Go client of a bothy instance for bot and app developers: a few REST
// calls (Me, PostMessage, Events) and Run, which follows the realtime gateway and hands every
// event the token may see to a handler exactly once and in seq order, across network drops,
// server restarts and reconnects.
//
// Run keeps a cursor, the seq of the last event it handed. It connects to /api/v1/gateway,
// identifies with the cursor (or resumes the session it had), hands the catch-up and then the
// live events, answers heartbeats, and after any close but "authentication failed" (4004),
// "resync required" (4016) and "replaced" (4015, 4017) reconnects with full-jitter exponential
// backoff (after "too many connections", 4018, never at once: the ceiling first), as the close
// code table of docs/gateway.md says. An event whose seq is
// not above the cursor is dropped, so a replay that overlaps what was already handed is never
// handed twice. A bot that must not miss events across its own restarts stores Cursor() after
// its handler has done its work and starts the next process with WithCursor.
//
// An agent uses Agent instead: NewAgent(baseURL, agentToken).Run(ctx, handler) hands each
// agent.invocation to the handler once, with an Invocation to Start, Update, Reply and Finish
// the run; it carries and renews the run's invocation token, keeps the document's version,
// cancels the handler's context on run.cancel_requested and acknowledges an invocation only
// after its handler returned nil. Handlers run concurrently, up to Agent.MaxConcurrent (8 by
// default; 1 hands the invocations one at a time, in order); while that many are busy it takes
// no further invocation (beyond a bounded buffer), though a cancel request still reaches them.
// The acknowledged seq is a low-water mark: it never passes an invocation
// whose handler has not returned, so a crash redelivers exactly the unfinished ones.
// RunLongPoll is the same over the REST consumer (GET /api/v1/agents/me/events, a long poll,
// and POST /api/v1/agents/me/ack), for an agent that cannot hold a WebSocket.
//
// Files go up before the message that carries them: UploadFile streams a reader as the body,
// UploadFileResumable sends a large one in parts (a part that fails is sent again), and
// NewMessage.AttachmentIDs names them in a post (Client.Post) or a run's answer
// (Invocation.ReplyWith). Messages and invocations carry their Attachments; DownloadFile and
// Thumbnail read them with the client's own token, as far as its rights on the channel go.
//
// The package talks to the server only over HTTP and WebSocket, like any other client; it must
// not import the server's packages. github.com/coder/websocket lives in gateway.go alone.
//
// It needs Go 1.26 or newer. No server answers for bothy.dev yet, so go get cannot resolve the
// module path: a bot's own module requires bothy.dev/bothy v0.0.0 and replaces it with a clone
// of the repository (go mod edit -require bothy.dev/bothy@v0.0.0 -replace
// bothy.dev/bothy=../bothy, then go mod tidy), as the README's "Connect a bot in five minutes"
// shows with a whole program that its test builds that way.
//
// A bot that answers "ping" with "pong" in every thread it may read:
//
//	func main() {
//		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//		defer stop()
//		bot := client.New("https://chat.example.com", os.Getenv("BOTHY_TOKEN"))
//		me, err := bot.Me(ctx)
//		if err != nil {
//			log.Fatal(err)
//		}
//		err = bot.Run(ctx, func(ev client.Event) error {
//			if ev.Type != "message.created" {
//				return nil
//			}
//			var m client.Message
//			if err := json.Unmarshal(ev.Data, &m); err != nil || m.AuthorID == me.ID || m.Content != "ping" {
//				return err
//			}
//			// The message id as client_msg_id: a retry after a crash answers the same reply.
//			_, err = bot.PostMessage(ctx, m.ThreadID, "pong", "pong-"+m.ID)
//			return err
//		})
//		if err != nil && !errors.Is(err, context.Canceled) {
//			log.Fatal(err)
//		}
//	}
package client
