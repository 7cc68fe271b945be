// Package llm is the agent `bothy agent llm`: a teammate that answers its mentions with a
// language model, as a process of its own next to the server. It is built on the public API
// alone (client.Agent and REST), never on the server's packages, and the server never calls a
// model: the agent holds the model's key, the server only its own API token.
//
// For each invocation it reads the thread (the invoking message and up to history earlier ones,
// each labelled with its author and whether a person, an agent or an integration wrote it, so
// that the model tells instructions from quoted content; the invoking message's files follow it,
// the text ones with their content up to 32 KiB in all, the others by name, type and size),
// starts the run, streams the model's answer into the run's output (the first text at once, then
// coalesced: a patch at most every 75 ms or 2 KiB), reports the cumulative token usage, posts the
// answer as the run's reply and finishes it succeeded.
//
// Two wire formats are spoken with net/http and an SSE reader of the package's own: the OpenAI
// chat completions API with stream: true (OpenAI, Ollama, vLLM, llama.cpp and other compatible
// servers), and Anthropic's Messages API. A 429 or 5xx is retried with backoff, honouring
// Retry-After; a refused key, a missing model or another failure of the provider fails the run
// with provider_unauthorized, model_not_found or provider_error and a sentence for the thread.
//
// Tools come from MCP servers (a command on stdio or a streamable HTTP URL), listed at start
// and offered to the model as server__tool. Each call is a step of the run (tool_call, running
// then done or failed). A tool listed under ask is first put to the person who invoked the
// run as an approval; a denial is what the model reads as the tool's result. A person's cancel
// stops the model's stream at once and the run ends cancelled.
package llm
