package gateway

import (
	"bothy.dev/bothy/app/catchup"
	"bothy.dev/bothy/app/kernel"
)

// CloseCode is the status of a WebSocket close frame. The 40xx codes are bothy's own; several of them mean something else in Discord's gateway, so a client must read this
// table (and docs/gateway.md), not guess.
type CloseCode int

const (
	CloseNormal             CloseCode = 1000
	CloseTooBig             CloseCode = 1009 // RFC 6455: a frame above gateway.max_frame_bytes (sent by the transport)
	CloseUnknownError       CloseCode = 4000
	CloseUnknownOp          CloseCode = 4001
	CloseDecodeError        CloseCode = 4002
	CloseNotAuthenticated   CloseCode = 4003
	CloseAuthFailed         CloseCode = 4004
	CloseAlreadyAuth        CloseCode = 4005
	CloseSessionInvalid     CloseCode = 4006
	CloseRateLimited        CloseCode = 4008
	CloseHeartbeatTimeout   CloseCode = 4009
	CloseServerRestart      CloseCode = 4013
	CloseSlowConsumer       CloseCode = 4014
	CloseConsumerTakenOver  CloseCode = 4015
	CloseResyncRequired     CloseCode = 4016
	CloseDeviceReplaced     CloseCode = 4017
	CloseTooManyConnections CloseCode = 4018
)

// Then is what a client does after a close.
type Then string

const (
	ThenResume   Then = "resume"   // reconnect and resume {session_id, seq}
	ThenIdentify Then = "identify" // reconnect and identify {token, cursor}
	ThenStop     Then = "stop"     // do not reconnect by itself
	ThenResync   Then = "resync"   // drop local state, reload it, identify without a cursor
)

// CloseInfo is one row of the close code table.
type CloseInfo struct {
	Code CloseCode
	// Name is the stable name, also the close frame's reason.
	Name string
	// When says when the server sends the code.
	When string
	// Reconnect tells whether a client reconnects by itself (with full-jitter backoff).
	Reconnect bool
	// Then is how it comes back.
	Then Then
	// KeepsSession tells whether the session stays resumable on this node after the close.
	KeepsSession bool
}

// CloseCodes is the one table of the gateway's close codes (errors map to close codes in one place); docs/gateway.md
// shows it and a test holds the two equal.
var CloseCodes = []CloseInfo{
	{CloseTooBig, "message_too_big", "a frame is larger than gateway.max_frame_bytes (RFC 6455 code, sent by the WebSocket layer)", true, ThenResume, true},
	{CloseUnknownError, "unknown_error", "the server failed (a panic, a database error while identifying or delivering)", true, ThenResume, true},
	{CloseUnknownOp, "unknown_op", "a frame with an op the server does not know", true, ThenResume, true},
	{CloseDecodeError, "decode_error", "a frame that is not a JSON object {op, d}, a binary frame, or a payload member of the wrong type", true, ThenResume, true},
	{CloseNotAuthenticated, "not_authenticated", "an op other than identify, resume or heartbeat before identify, or no identify within gateway.identify_timeout", true, ThenIdentify, false},
	{CloseAuthFailed, "authentication_failed", "a token that is unknown, expired or revoked; the person or agent was disabled; the login session was logged out; the API token was revoked", false, ThenStop, false},
	{CloseAlreadyAuth, "already_authenticated", "identify or resume on a connection that already did", true, ThenResume, true},
	{CloseSessionInvalid, "session_invalid", "resume of a session this node does not hold (unknown, expired, another node's, from before a restart), or the session was resumed by a newer connection", true, ThenIdentify, false},
	{CloseRateLimited, "rate_limited", "more than 120 frames in 60 seconds, heartbeats aside (an agent's consumer: 120 more, for its acks)", true, ThenResume, true},
	{CloseHeartbeatTimeout, "heartbeat_timeout", "no frame from the client for 1.5 heartbeat intervals", true, ThenResume, true},
	{CloseServerRestart, "server_restart", "the server is shutting down; the new process holds no session", true, ThenIdentify, false},
	{CloseSlowConsumer, "slow_consumer", "the connection's outbound queue overflowed (sync.outbound_queue_max) or a write missed gateway.write_timeout", true, ThenResume, true},
	{CloseConsumerTakenOver, "consumer_taken_over", "a newer connection of the same agent took its consumer over", false, ThenStop, false},
	{CloseResyncRequired, "resync_required", "the cursor is beyond the head of the log, or events after it were removed by retention (sync.event_retention); the reason names the head_seq to go on from", false, ThenResync, false},
	{CloseDeviceReplaced, "device_replaced", "a newer connection of the same device (identify's device_id) replaced this one", false, ThenStop, false},
	{CloseTooManyConnections, "too_many_connections", "the principal already holds gateway.max_connections_per_principal identified connections, or the address gateway.max_connections_per_address connections", true, ThenResume, true},
}

// Info returns the row of code; an unknown code gets the row of 4000.
func Info(code CloseCode) CloseInfo {
	for _, c := range CloseCodes {
		if c.Code == code {
			return c
		}
	}
	return Info(CloseUnknownError)
}

// closeFor maps a domain error to the close code of the op that failed with it: the one place
// that does, so that a code means the same on every op. It goes by the code's class, so a
// module's own code needs no line here; a cursor the log has not reached, or one older than
// what it keeps (catchup.CodeResyncRequired), is what a client recovers from by a fresh start,
// not by fixing its frame.
func closeFor(err error) CloseCode {
	code := kernel.CodeOf(err)
	if code == kernel.CodeCursorInvalid || code == catchup.CodeResyncRequired {
		return CloseResyncRequired
	}
	switch code.Class() {
	case kernel.ClassUnauthenticated:
		return CloseAuthFailed
	case kernel.ClassRateLimited:
		return CloseRateLimited
	case kernel.ClassInvalid:
		return CloseDecodeError
	}
	return CloseUnknownError
}
