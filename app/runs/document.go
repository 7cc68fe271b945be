package runs

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	"bothy.dev/bothy/app/kernel"
)

// Bounds of the run document. They keep one run's document small enough to store as a row and
// to send whole to a client that arrives late.
const (
	MaxStatusLineRunes = 200
	MaxSteps           = 200
	MaxStepIDBytes     = 64
	MaxStepTitleRunes  = 200
	MaxStepDetailBytes = 4 << 10
	MaxOutputBytes     = 256 << 10
)

// Document is what a run shows while it works: a status line, its steps and its output so far.
// The stored document is the latest one; a client that arrives late reads it whole and then
// applies the run.updated patches that follow its Version.
type Document struct {
	// Version counts the patches applied: 0 when the run starts, then 1, 2, …
	Version int `json:"version"`
	// Status is the status line: one short line of what the agent is doing now. It is not the
	// run's state (type Status), which only Next changes.
	Status string `json:"status"`
	Steps  []Step `json:"steps"`
	Output string `json:"output"`
}

// MarshalJSON writes a document without steps with "steps":[], so that clients need not tell
// null from empty.
func (d Document) MarshalJSON() ([]byte, error) {
	type plain Document // without the method, so that json.Marshal does not call it again
	if d.Steps == nil {
		d.Steps = []Step{}
	}
	return json.Marshal(plain(d))
}

// Step is one thing the run did or does: a thought, a tool call, an intermediate message.
type Step struct {
	// ID is the agent's own id of the step (a tool call id, say): 1 to 64 bytes of printable
	// ASCII without spaces. Patches address the step by it.
	ID     string     `json:"id"`
	Kind   StepKind   `json:"kind"`
	Title  string     `json:"title"`
	Status StepStatus `json:"status"`
	// Detail is free text, such as a tool call's arguments or the head of its result.
	Detail string `json:"detail"`
}

// StepKind is what sort of step it is; clients pick its icon and layout from it.
type StepKind string

const (
	StepThought  StepKind = "thought"
	StepToolCall StepKind = "tool_call"
	StepMessage  StepKind = "message"
	// StepTask is an item of the agent's plan, shown as a list that it ticks off.
	StepTask StepKind = "task"
)

func (k StepKind) valid() bool {
	switch k {
	case StepThought, StepToolCall, StepMessage, StepTask:
		return true
	}
	return false
}

// StepStatus is where a step stands.
type StepStatus string

const (
	// StepPending is a step announced but not begun, like the open items of a plan.
	StepPending StepStatus = "pending"
	StepRunning StepStatus = "running"
	StepDone    StepStatus = "done"
	StepFailed  StepStatus = "failed"
)

func (s StepStatus) valid() bool {
	switch s {
	case StepPending, StepRunning, StepDone, StepFailed:
		return true
	}
	return false
}

// Patch is a change to the run document, as an agent sends it with PATCH /api/v1/runs/{id}
// (its JSON form is the request body) and as run.updated carries it to clients. The package
// comment says what each field does.
type Patch struct {
	// Version is the document's version after the patch.
	Version int `json:"version"`
	// Status replaces the status line when set.
	Status *string `json:"status,omitempty"`
	// Steps are upserted by ID, in order; a set field of a known step replaces that field.
	Steps []Step `json:"steps,omitempty"`
	// Output replaces the output when set.
	Output *string `json:"output,omitempty"`
	// OutputAppend is appended to the output, after Output. A string rather than a pointer
	// because appending nothing and not appending are the same.
	OutputAppend string `json:"output_append,omitempty"`
	// Usage is what the run has consumed so far, cumulative (not a delta); nil reports nothing.
	// It is no part of the document: the run keeps it beside it, and run.updated does not carry it.
	Usage *Usage `json:"usage,omitempty"`

	// span is how many versions the patch advances the document by: 0 (read as 1) for a patch
	// as an agent sends it, more for one Merge made. Unexported, so that no request body can
	// skip versions.
	span int
}

// BaseVersion is the version of the document the patch applies to: Version-1 for an agent's
// patch, the version before the first of its patches for a merged one. A client holding any
// other version must reload the document instead.
func (p Patch) BaseVersion() int { return p.Version - p.versions() }

func (p Patch) versions() int { return max(p.span, 1) }

// Apply returns doc with p applied; doc itself is not changed. Errors: run_version_conflict when p
// does not apply to doc's version (the message says which version to send); validation_failed
// with the field's name when p or the resulting document breaks a bound.
func Apply(doc Document, p Patch) (Document, error) {
	next, _, err := ApplyHead(doc, len(doc.Output), p)
	if err != nil {
		return doc, err
	}
	if p.Output != nil {
		next.Output = *p.Output
	}
	next.Output += p.OutputAppend
	return next, nil
}

// ApplyHead is Apply for a caller that does not hold the output, only its length outputBytes:
// the stored output grows by parts (Store.PatchRun), so a patch must not cost the output so far.
// It returns the next document with doc's Output left as it was, and the length of the output
// after p. It checks and refuses exactly as Apply does.
func ApplyHead(doc Document, outputBytes int, p Patch) (Document, int, error) {
	if p.BaseVersion() != doc.Version {
		return doc, outputBytes, kernel.Errorf(CodeRunVersionConflict, "the run document is at version %d: the next patch has version %d", doc.Version, doc.Version+1)
	}
	if err := checkPatch(p); err != nil {
		return doc, outputBytes, err
	}
	next := Document{Version: p.Version, Status: doc.Status, Steps: slices.Clone(doc.Steps), Output: doc.Output}
	if p.Status != nil {
		next.Status = *p.Status
	}
	for i, s := range p.Steps {
		if at := indexOfStep(next.Steps, s.ID); at >= 0 {
			next.Steps[at] = overlayStep(next.Steps[at], s)
			continue
		}
		if s.Kind == "" {
			return doc, outputBytes, kernel.Invalid(stepField(i, "kind"), "step %q is new and needs a kind", s.ID)
		}
		if s.Status == "" {
			s.Status = StepRunning
		}
		next.Steps = append(next.Steps, s)
	}
	if len(next.Steps) > MaxSteps {
		return doc, outputBytes, kernel.Invalid("steps", "a run has at most %d steps", MaxSteps)
	}
	n := outputBytes
	if p.Output != nil {
		n = len(*p.Output)
	}
	if n+len(p.OutputAppend) > MaxOutputBytes {
		field := "output"
		if p.OutputAppend != "" {
			field = "output_append"
		}
		return doc, outputBytes, kernel.Invalid(field, "the output of a run is at most %d bytes", MaxOutputBytes)
	}
	return next, n + len(p.OutputAppend), nil
}

// Merge returns one patch that does what a and then b do, for the fan-out: the run.updated
// events of a thread are coalesced per sync.run_patch_coalesce_interval, and a client that
// applies the merged patch ends with the document it would have had from both. ok is false when
// b does not follow a directly (a patch went missing or came out of order); the caller then
// sends the stored document instead.
//
// Where a and b both apply to a document, the merged patch applies to it too, with the same
// result. (The reverse need not hold: b may replace an output that a had made too long.)
func Merge(a, b Patch) (merged Patch, ok bool) {
	if b.BaseVersion() != a.Version {
		return Patch{}, false
	}
	merged = Patch{Version: b.Version, span: a.versions() + b.versions()}
	switch {
	case b.Status != nil:
		merged.Status = ptr(*b.Status)
	case a.Status != nil:
		merged.Status = ptr(*a.Status)
	}
	merged.Steps = slices.Clone(a.Steps)
	for _, s := range b.Steps {
		if at := indexOfStep(merged.Steps, s.ID); at >= 0 {
			merged.Steps[at] = overlayStep(merged.Steps[at], s)
		} else {
			merged.Steps = append(merged.Steps, s)
		}
	}
	// Output is (replace, then append); composing two such is again one.
	switch {
	case b.Output != nil:
		merged.Output, merged.OutputAppend = ptr(*b.Output), b.OutputAppend
	case a.Output != nil:
		merged.Output, merged.OutputAppend = ptr(*a.Output), a.OutputAppend+b.OutputAppend
	default:
		merged.OutputAppend = a.OutputAppend + b.OutputAppend
	}
	return merged, true
}

// overlayStep returns old with the fields s sets: a patch names only what changes.
func overlayStep(old, s Step) Step {
	if s.Kind != "" {
		old.Kind = s.Kind
	}
	if s.Title != "" {
		old.Title = s.Title
	}
	if s.Status != "" {
		old.Status = s.Status
	}
	if s.Detail != "" {
		old.Detail = s.Detail
	}
	return old
}

func indexOfStep(steps []Step, id string) int {
	return slices.IndexFunc(steps, func(s Step) bool { return s.ID == id })
}

// checkPatch checks each field of p on its own; Apply checks what depends on the document.
func checkPatch(p Patch) error {
	if p.Status != nil {
		if err := checkLine("status", *p.Status, MaxStatusLineRunes); err != nil {
			return err
		}
	}
	if len(p.Steps) > MaxSteps {
		return kernel.Invalid("steps", "a patch has at most %d steps", MaxSteps)
	}
	for i, s := range p.Steps {
		if err := checkStepID(stepField(i, "id"), s.ID); err != nil {
			return err
		}
		if indexOfStep(p.Steps[:i], s.ID) >= 0 {
			return kernel.Invalid(stepField(i, "id"), "step %q appears twice in the patch", s.ID)
		}
		if s.Kind != "" && !s.Kind.valid() {
			return kernel.Invalid(stepField(i, "kind"), "kind must be one of thought, tool_call, message, task")
		}
		if s.Status != "" && !s.Status.valid() {
			return kernel.Invalid(stepField(i, "status"), "status must be one of pending, running, done, failed")
		}
		if err := checkLine(stepField(i, "title"), s.Title, MaxStepTitleRunes); err != nil {
			return err
		}
		if err := checkText(stepField(i, "detail"), s.Detail, MaxStepDetailBytes); err != nil {
			return err
		}
	}
	if p.Output != nil {
		if err := checkText("output", *p.Output, MaxOutputBytes); err != nil {
			return err
		}
	}
	if err := checkText("output_append", p.OutputAppend, MaxOutputBytes); err != nil {
		return err
	}
	if p.Usage != nil {
		return p.Usage.check()
	}
	return nil
}

func stepField(i int, name string) string { return fmt.Sprintf("steps[%d].%s", i, name) }

func checkStepID(field, id string) error {
	if id == "" || len(id) > MaxStepIDBytes {
		return kernel.Invalid(field, "a step id has 1 to %d bytes", MaxStepIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return kernel.Invalid(field, "a step id is printable ASCII without spaces")
		}
	}
	return nil
}

// checkLine checks one line of text: valid UTF-8 without any control character, at most
// maxRunes characters. Errors: validation_failed.
func checkLine(field, s string, maxRunes int) error {
	if len(s) > maxRunes*utf8.UTFMax || utf8.RuneCountInString(s) > maxRunes {
		return kernel.Invalid(field, "%s is at most %d characters", field, maxRunes)
	}
	return checkChars(field, s, false)
}

// checkText checks free text: valid UTF-8 without control characters but newline and tab, at
// most maxBytes bytes. Errors: validation_failed.
func checkText(field, s string, maxBytes int) error {
	if len(s) > maxBytes {
		return kernel.Invalid(field, "%s is at most %d bytes", field, maxBytes)
	}
	return checkChars(field, s, true)
}

func checkChars(field, s string, multiline bool) error {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && !(multiline && (c == '\n' || c == '\t')) || c == 0x7f {
				return kernel.Invalid(field, "%s must not contain control characters", field)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return kernel.Invalid(field, "%s is not valid UTF-8", field)
		}
		i += n
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
