package httpapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"bothy.dev/bothy/app/agents"
	"bothy.dev/bothy/app/dms"
	"bothy.dev/bothy/app/files"
	"bothy.dev/bothy/app/identity"
	"bothy.dev/bothy/app/kernel/names"
	"bothy.dev/bothy/app/messaging"
	"bothy.dev/bothy/app/push"
	"bothy.dev/bothy/app/runs"
	"bothy.dev/bothy/app/search"
)

// bounds is what the document says of one string field: minLength and maxLength, -1 where it
// says nothing (and maxItems for an array).
type bounds struct{ min, max int }

const none = -1

// documentedBounds holds, for every field of the document that has a length bound, the bound
// the server keeps: the constant its validator uses. A bound in the document that is not here,
// or differs from here, fails TestDocumentedBoundsAreTheServers; so does a field here whose
// bound the document does not state. Keys are the component and the path of the property in it
// (array items left out). The names and short texts a person gives come from app/kernel/names,
// which every module's validator uses. Where the server counts bytes (content, passwords, run
// output) the document can only state the same number as a count of characters, the tightest
// bound JSON Schema has; its description says bytes.
var documentedBounds = map[string]bounds{
	// People and agents: handles, display names, passwords, descriptions.
	"schemas/SetupRequest/code":                      {1, none},
	"schemas/SetupRequest/handle":                    {names.MinLen, names.MaxHandle},
	"schemas/SetupRequest/display_name":              {names.MinLen, names.MaxDisplayName},
	"schemas/SetupRequest/password":                  {identity.MinPasswordBytes, identity.MaxPasswordBytes},
	"schemas/LoginRequest/handle":                    {names.MinLen, names.MaxHandle},
	"schemas/LoginRequest/password":                  {1, identity.MaxPasswordBytes},
	"schemas/CreateUserRequest/handle":               {names.MinLen, names.MaxHandle},
	"schemas/CreateUserRequest/display_name":         {names.MinLen, names.MaxDisplayName},
	"schemas/CreateUserRequest/password":             {identity.MinPasswordBytes, identity.MaxPasswordBytes},
	"schemas/ResetPasswordRequest/password":          {identity.MinPasswordBytes, identity.MaxPasswordBytes},
	"schemas/ChangePasswordRequest/current_password": {none, identity.MaxPasswordBytes},
	"schemas/ChangePasswordRequest/new_password":     {identity.MinPasswordBytes, identity.MaxPasswordBytes},
	"schemas/CreateTokenRequest/name":                {names.MinLen, names.MaxTokenName},
	"schemas/CreateAgentRequest/handle":              {names.MinLen, names.MaxHandle},
	"schemas/CreateAgentRequest/display_name":        {names.MinLen, names.MaxDisplayName},
	"schemas/CreateAgentRequest/description":         {none, names.MaxDescription},
	"schemas/User/handle":                            {1, none},
	"schemas/Agent/handle":                           {1, none},
	"schemas/CreatedAgent/handle":                    {1, none},
	"schemas/Session/token":                          {1, none},

	// Spaces, channels, threads, messages.
	"schemas/CreateSpaceRequest/name":             {names.MinLen, names.MaxName},
	"schemas/UpdateSpaceRequest/name":             {names.MinLen, names.MaxName},
	"schemas/CreateChannelRequest/name":           {names.MinLen, names.MaxName},
	"schemas/UpdateChannelRequest/name":           {names.MinLen, names.MaxName},
	"schemas/UpdateChannelRequest/topic":          {none, names.MaxTopic},
	"schemas/CreateThreadRequest/title":           {none, names.MaxTitle},
	"schemas/UpdateThreadRequest/title":           {none, names.MaxTitle},
	"schemas/CreateDMRequest/participant_ids":     {none, dms.MaxOthers},
	"schemas/CreateThreadRequest/content":         {none, messaging.MaxContentBytes},
	"schemas/CreateThreadRequest/attachment_ids":  {none, files.MaxAttachments},
	"schemas/CreateThreadRequest/client_msg_id":   {names.MinLen, names.MaxClientMsgID},
	"schemas/CreateMessageRequest/content":        {none, messaging.MaxContentBytes},
	"schemas/CreateMessageRequest/attachment_ids": {none, files.MaxAttachments},
	"schemas/CreateMessageRequest/client_msg_id":  {names.MinLen, names.MaxClientMsgID},
	"schemas/UpdateMessageRequest/content":        {1, messaging.MaxContentBytes},
	"parameters/Emoji":                            {1, messaging.MaxEmojiBytes},
	"schemas/PinList/items":                       {none, messaging.MaxPinsPerChannel},
	"schemas/Instance/name":                       {names.MinLen, names.MaxInstanceName},
	"schemas/UpdateInstanceRequest/name":          {names.MinLen, names.MaxInstanceName},

	// A message's buttons and selects, and an interaction with them.
	"schemas/PostMessageRequest/content":        {none, messaging.MaxContentBytes},
	"schemas/PostMessageRequest/attachment_ids": {none, files.MaxAttachments},
	"schemas/Message/attachments":               {none, files.MaxAttachments},
	"schemas/AgentInvocation/attachments":       {none, files.MaxAttachments},

	// Search: q is refused beyond search.MaxQueryBytes (bytes, stated as characters).
	"paths//api/v1/search/get/parameters/0/schema": {none, search.MaxQueryBytes},

	// Files: names are cut to files.MaxNameBytes; a content type is at most 255 bytes.
	"paths//api/v1/files/post/parameters/0/schema": {1, none},
	"schemas/Attachment/name":                      {none, files.MaxNameBytes},
	"schemas/File/name":                            {none, files.MaxNameBytes},
	"schemas/CreateUploadRequest/name":             {1, none},
	"schemas/CreateUploadRequest/content_type":     {none, files.MaxContentTypeBytes},
	"schemas/PostMessageRequest/client_msg_id":     {names.MinLen, names.MaxClientMsgID},
	"schemas/PostMessageRequest/components":        {none, messaging.MaxComponentRows},
	"schemas/CreateMessageRequest/components":      {none, messaging.MaxComponentRows},
	"schemas/CreateThreadRequest/components":       {none, messaging.MaxComponentRows},
	"schemas/UpdateMessageRequest/components":      {none, messaging.MaxComponentRows},
	"schemas/Message/components":                   {none, messaging.MaxComponentRows},
	"schemas/ActionRow/components":                 {none, messaging.MaxRowComponents},
	"schemas/Component/id":                         {1, messaging.MaxComponentIDBytes},
	"schemas/Component/label":                      {1, messaging.MaxComponentLabel},
	"schemas/Component/value":                      {none, messaging.MaxComponentValue},
	"schemas/Component/placeholder":                {none, messaging.MaxSelectPlaceholder},
	"schemas/Component/options":                    {none, messaging.MaxSelectOptions},
	"schemas/SelectOption/label":                   {1, messaging.MaxComponentLabel},
	"schemas/SelectOption/value":                   {1, messaging.MaxComponentValue},
	"schemas/InteractionRequest/component_id":      {1, none},

	// Runs: the document an agent patches, and its error message.
	"schemas/RunPatch/status":          {none, runs.MaxStatusLineRunes},
	"schemas/RunPatch/steps":           {none, runs.MaxSteps},
	"schemas/RunPatch/steps/id":        {1, runs.MaxStepIDBytes},
	"schemas/RunPatch/steps/title":     {none, runs.MaxStepTitleRunes},
	"schemas/RunPatch/steps/detail":    {none, runs.MaxStepDetailBytes},
	"schemas/RunPatch/output":          {none, runs.MaxOutputBytes},
	"schemas/RunPatch/output_append":   {none, runs.MaxOutputBytes},
	"schemas/RunStep/id":               {1, runs.MaxStepIDBytes},
	"schemas/RunStep/title":            {none, runs.MaxStepTitleRunes},
	"schemas/RunStep/detail":           {none, runs.MaxStepDetailBytes},
	"schemas/RunFinish/error/message":  {none, runs.MaxErrorMessageBytes},
	"parameters/RunInvocationToken":    {1, none},
	"parameters/AnswerInvocationToken": {1, none},
	"parameters/IfMatch":               {1, none},
	"parameters/IdempotencyKey":        {1, maxIdempotencyKeyBytes},
	"headers/CorrelationId":            {1, none},

	// Approvals: what a run asks people.
	"schemas/CreateApprovalRequest/title":        {1, runs.MaxApprovalTitleBytes},
	"schemas/CreateApprovalRequest/detail":       {none, runs.MaxApprovalDetailBytes},
	"schemas/CreateApprovalRequest/approver_ids": {none, runs.MaxApprovers},

	// Web Push: a browser's endpoint.
	"schemas/CreatePushSubscriptionRequest/endpoint": {1, push.MaxEndpointBytes},

	"schemas/AgentCommand/name":        {1, agents.MaxCommandName},
	"schemas/AgentCommand/description": {none, agents.MaxCommandDescription},
	"schemas/AgentCommand/args_hint":   {none, agents.MaxCommandArgsHint},
}

// TestDocumentedBoundsAreTheServers walks every schema of the OpenAPI document and compares
// each length bound it states with the server's: a client that validates against the document
// must neither send what the server refuses for its length nor hold back what it accepts.
func TestDocumentedBoundsAreTheServers(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	found := map[string]bounds{}
	components := doc["components"].(map[string]any)
	for _, kind := range []string{"schemas", "parameters", "headers"} {
		for name, v := range components[kind].(map[string]any) {
			obj := v.(map[string]any)
			if s, ok := obj["schema"].(map[string]any); ok { // a parameter or a header
				obj = s
			}
			collectBounds(found, kind+"/"+name, obj)
		}
	}
	// Inline schemas of the operations count too.
	collectBounds(found, "paths", doc["paths"].(map[string]any))

	var keys []string
	for k := range documentedBounds {
		keys = append(keys, k)
	}
	for k := range found {
		if _, ok := documentedBounds[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		want, listed := documentedBounds[k]
		got, stated := found[k]
		switch {
		case !listed:
			t.Errorf("%s: the document states %s, which no server constant backs: add it to documentedBounds", k, got)
		case !stated:
			t.Errorf("%s: the document states no bound, the server's is %s", k, want)
		case got != want:
			t.Errorf("%s: the document states %s, the server's is %s", k, got, want)
		}
	}
}

func (b bounds) String() string {
	f := func(n int) string {
		if n == none {
			return "none"
		}
		return fmt.Sprint(n)
	}
	return "min " + f(b.min) + ", max " + f(b.max)
}

// collectBounds records the bounds of s and of what it holds under path: the properties of
// an object (by name), the items of an array (under the array's path), and, for the
// inline schemas of paths, whatever nests there.
func collectBounds(found map[string]bounds, path string, s map[string]any) {
	b := bounds{intOr(s["minLength"], none), intOr(s["maxLength"], none)}
	if mi, ok := s["maxItems"]; ok {
		b = bounds{none, intOr(mi, none)}
	}
	if b != (bounds{none, none}) {
		found[path] = b
	}
	for k, v := range s {
		child, ok := v.(map[string]any)
		switch {
		case !ok:
			if list, isList := v.([]any); isList && strings.HasPrefix(path, "paths") {
				for i, e := range list {
					if m, isMap := e.(map[string]any); isMap {
						collectBounds(found, fmt.Sprintf("%s/%s/%d", path, k, i), m)
					}
				}
			}
		case k == "properties":
			for name, p := range child {
				if pm, isMap := p.(map[string]any); isMap {
					collectBounds(found, path+"/"+name, pm)
				}
			}
		case k == "items":
			for ik, iv := range child {
				if ik == "properties" {
					for name, p := range iv.(map[string]any) {
						if pm, isMap := p.(map[string]any); isMap {
							collectBounds(found, path+"/"+name, pm)
						}
					}
				}
			}
			// A bound on the items themselves would read as the array's: none today.
			if _, has := child["maxLength"]; has {
				found[path+"/items"] = bounds{intOr(child["minLength"], none), intOr(child["maxLength"], none)}
			}
		case strings.HasPrefix(path, "paths") || k == "not" || k == "schema":
			collectBounds(found, path+"/"+k, child)
		}
	}
}

func intOr(v any, def int) int {
	if f, ok := v.(float64); ok {
		return int(f)
	}
	return def
}
