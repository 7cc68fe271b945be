package identity

import "bothy.dev/bothy/app/kernel"

// Actions of identity: setting up the instance, signing in and out, a principal's own
// account and tokens, and the owners' management of people.
const (
	ActInstanceBootstrap kernel.Action = "instance.bootstrap"
	ActLogin             kernel.Action = "auth.login.complete"
	ActLogout            kernel.Action = "auth.logout"
	ActSelfRead          kernel.Action = "self.read"
	ActSelfPassword      kernel.Action = "self.password.change"
	ActUserRead          kernel.Action = "user.read"
	ActUserCreate        kernel.Action = "user.create"
	ActUserDisable       kernel.Action = "user.disable"
	// ActUserEnable is an owner enabling a disabled person again.
	ActUserEnable kernel.Action = "user.enable"
	// ActUserPasswordReset is an owner setting a new password for a person.
	ActUserPasswordReset kernel.Action = "user.password.reset"
	ActTokenList         kernel.Action = "token.list"
	ActTokenCreate       kernel.Action = "token.create"
	ActTokenRevoke       kernel.Action = "token.revoke"
)
