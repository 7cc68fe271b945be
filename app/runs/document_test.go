package runs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"bothy.dev/bothy/app/kernel"
)

func str(s string) *string { return &s }

// mustApply applies patches in order and fails the test on the first error.
func mustApply(tb testing.TB, doc Document, patches ...Patch) Document {
	tb.Helper()
	for _, p := range patches {
		var err error
		if doc, err = Apply(doc, p); err != nil {
			tb.Fatalf("apply version %d: %v", p.Version, err)
		}
	}
	return doc
}

// started is a document after two patches: a status line, two steps and some output.
func started(tb testing.TB) Document {
	return mustApply(tb, Document{},
		Patch{Version: 1, Status: str("Reading the thread"), Steps: []Step{{ID: "s1", Kind: StepThought, Title: "Think"}}},
		Patch{Version: 2, Steps: []Step{{ID: "s2", Kind: StepToolCall, Title: "search", Detail: "q=bothy"}}, OutputAppend: "Hello"},
	)
}

func TestApply(t *testing.T) {
	tests := []struct {
		name  string
		patch Patch
		want  func(d *Document) // edits the started document into the expected one
	}{
		{"sets the version and nothing else for an empty patch", Patch{Version: 3}, func(d *Document) {}},
		{"replaces the status line", Patch{Version: 3, Status: str("Writing")}, func(d *Document) { d.Status = "Writing" }},
		{"clears the status line", Patch{Version: 3, Status: str("")}, func(d *Document) { d.Status = "" }},
		{"appends output", Patch{Version: 3, OutputAppend: ", world"}, func(d *Document) { d.Output = "Hello, world" }},
		{"replaces output", Patch{Version: 3, Output: str("Bye")}, func(d *Document) { d.Output = "Bye" }},
		{"clears output", Patch{Version: 3, Output: str("")}, func(d *Document) { d.Output = "" }},
		{"replaces and then appends output", Patch{Version: 3, Output: str("A"), OutputAppend: "B"}, func(d *Document) { d.Output = "AB" }},
		{"appends a new step, running by default", Patch{Version: 3, Steps: []Step{{ID: "s3", Kind: StepMessage, Title: "Draft"}}}, func(d *Document) {
			d.Steps = append(d.Steps, Step{ID: "s3", Kind: StepMessage, Title: "Draft", Status: StepRunning})
		}},
		{"appends a new step with its own status", Patch{Version: 3, Steps: []Step{{ID: "s3", Kind: StepTask, Title: "Later", Status: StepPending}}}, func(d *Document) {
			d.Steps = append(d.Steps, Step{ID: "s3", Kind: StepTask, Title: "Later", Status: StepPending})
		}},
		{"changes only the fields a known step sets", Patch{Version: 3, Steps: []Step{{ID: "s2", Status: StepDone, Detail: "3 hits"}}}, func(d *Document) {
			d.Steps[1].Status, d.Steps[1].Detail = StepDone, "3 hits"
		}},
		{"keeps a known step in its place", Patch{Version: 3, Steps: []Step{{ID: "s3", Kind: StepThought}, {ID: "s1", Status: StepFailed}}}, func(d *Document) {
			d.Steps[0].Status = StepFailed
			d.Steps = append(d.Steps, Step{ID: "s3", Kind: StepThought, Status: StepRunning})
		}},
		{"appends new steps in the patch's order", Patch{Version: 3, Steps: []Step{{ID: "b", Kind: StepTask}, {ID: "a", Kind: StepTask}}}, func(d *Document) {
			d.Steps = append(d.Steps, Step{ID: "b", Kind: StepTask, Status: StepRunning}, Step{ID: "a", Kind: StepTask, Status: StepRunning})
		}},
		{"takes a status line of 200 characters, multi-byte ones too", Patch{Version: 3, Status: str(strings.Repeat("ü", MaxStatusLineRunes))}, func(d *Document) {
			d.Status = strings.Repeat("ü", MaxStatusLineRunes)
		}},
		{"takes a detail of 4 KiB with newlines and tabs", Patch{Version: 3, Steps: []Step{{ID: "s1", Detail: "a\tb\n" + strings.Repeat("x", MaxStepDetailBytes-4)}}}, func(d *Document) {
			d.Steps[0].Detail = "a\tb\n" + strings.Repeat("x", MaxStepDetailBytes-4)
		}},
		{"takes an output of exactly 256 KiB", Patch{Version: 3, OutputAppend: strings.Repeat("é", (MaxOutputBytes-5)/2) + "!"}, func(d *Document) {
			d.Output = "Hello" + strings.Repeat("é", (MaxOutputBytes-5)/2) + "!"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := started(t)
			want := started(t)
			want.Version = tt.patch.Version
			tt.want(&want)
			got, err := Apply(doc, tt.patch)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			if !reflect.DeepEqual(doc, started(t)) {
				t.Fatalf("the input document changed: %+v", doc)
			}
			// ApplyHead, on the document without its output, makes the same head and tells
			// the length of the output Apply makes.
			head := started(t)
			head.Output = ""
			gotHead, n, err := ApplyHead(head, len(doc.Output), tt.patch)
			want.Output = ""
			if err != nil || !reflect.DeepEqual(gotHead, want) || n != len(got.Output) {
				t.Fatalf("ApplyHead: %+v, %d bytes, %v; want %+v, %d bytes", gotHead, n, err, want, len(got.Output))
			}
		})
	}

	t.Run("does not share steps with the input document", func(t *testing.T) {
		doc := started(t)
		got := mustApply(t, doc, Patch{Version: 3})
		got.Steps[0].Title = "changed"
		if doc.Steps[0].Title != "Think" {
			t.Fatal("the result shares its steps with the input")
		}
	})
	t.Run("reads a request body in the JSON form docs/runs.md shows", func(t *testing.T) {
		var p Patch
		body := `{"version":1,"status":"Searching","steps":[{"id":"call_1","kind":"tool_call","title":"search"}],"output_append":"Hi"}`
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		got := mustApply(t, Document{}, p)
		want := Document{Version: 1, Status: "Searching", Steps: []Step{{ID: "call_1", Kind: StepToolCall, Title: "search", Status: StepRunning}}, Output: "Hi"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("writes a document without steps with an empty list", func(t *testing.T) {
		b, err := json.Marshal(Document{})
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != `{"version":0,"status":"","steps":[],"output":""}` {
			t.Fatalf("%s", b)
		}
	})
	t.Run("a request body cannot skip versions", func(t *testing.T) {
		var p Patch
		if err := json.Unmarshal([]byte(`{"version":3,"span":3}`), &p); err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(Document{}, p); kernel.CodeOf(err) != CodeRunVersionConflict {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestApplyRefuses(t *testing.T) {
	manySteps := func(n int, prefix string) []Step {
		steps := make([]Step, n)
		for i := range steps {
			steps[i] = Step{ID: fmt.Sprintf("%s%d", prefix, i), Kind: StepTask}
		}
		return steps
	}
	full := mustApply(t, Document{}, Patch{Version: 1, Steps: manySteps(MaxSteps-2, "x"), OutputAppend: strings.Repeat("a", MaxOutputBytes)})
	full.Version = started(t).Version // so that one table fits both documents

	tests := []struct {
		name  string
		doc   Document
		patch Patch
		code  kernel.Code
		field string
	}{
		{"a first patch with version 0", Document{}, Patch{Version: 0}, CodeRunVersionConflict, ""},
		{"a first patch with version 2", Document{}, Patch{Version: 2}, CodeRunVersionConflict, ""},
		{"a patch with the current version, as a retry sends it", started(t), Patch{Version: 2, OutputAppend: "again"}, CodeRunVersionConflict, ""},
		{"a patch that skips a version", started(t), Patch{Version: 4}, CodeRunVersionConflict, ""},
		{"a negative version", Document{}, Patch{Version: -1}, CodeRunVersionConflict, ""},

		{"a status line of 201 characters", started(t), Patch{Version: 3, Status: str(strings.Repeat("ü", MaxStatusLineRunes+1))}, kernel.CodeValidation, "status"},
		{"a status line with a newline", started(t), Patch{Version: 3, Status: str("a\nb")}, kernel.CodeValidation, "status"},
		{"a status line in invalid UTF-8", started(t), Patch{Version: 3, Status: str("a\xff")}, kernel.CodeValidation, "status"},

		{"a step without id", started(t), Patch{Version: 3, Steps: []Step{{Kind: StepThought}}}, kernel.CodeValidation, "steps[0].id"},
		{"a step id of 65 bytes", started(t), Patch{Version: 3, Steps: []Step{{ID: strings.Repeat("i", 65), Kind: StepThought}}}, kernel.CodeValidation, "steps[0].id"},
		{"a step id with a space", started(t), Patch{Version: 3, Steps: []Step{{ID: "s 1", Kind: StepThought}}}, kernel.CodeValidation, "steps[0].id"},
		{"a step id twice in one patch", started(t), Patch{Version: 3, Steps: []Step{{ID: "s9", Kind: StepThought}, {ID: "s9", Status: StepDone}}}, kernel.CodeValidation, "steps[1].id"},
		{"a new step without kind", started(t), Patch{Version: 3, Steps: []Step{{ID: "s1"}, {ID: "s9", Title: "?"}}}, kernel.CodeValidation, "steps[1].kind"},
		{"an unknown kind", started(t), Patch{Version: 3, Steps: []Step{{ID: "s1", Kind: "shell"}}}, kernel.CodeValidation, "steps[0].kind"},
		{"an unknown step status", started(t), Patch{Version: 3, Steps: []Step{{ID: "s1", Status: "ok"}}}, kernel.CodeValidation, "steps[0].status"},
		{"a title of 201 characters", started(t), Patch{Version: 3, Steps: []Step{{ID: "s1", Title: strings.Repeat("t", MaxStepTitleRunes+1)}}}, kernel.CodeValidation, "steps[0].title"},
		{"a title with a tab", started(t), Patch{Version: 3, Steps: []Step{{ID: "s1", Title: "a\tb"}}}, kernel.CodeValidation, "steps[0].title"},
		{"a detail over 4 KiB", started(t), Patch{Version: 3, Steps: []Step{{ID: "s1", Detail: strings.Repeat("d", MaxStepDetailBytes+1)}}}, kernel.CodeValidation, "steps[0].detail"},
		{"a detail with a carriage return", started(t), Patch{Version: 3, Steps: []Step{{ID: "s1", Detail: "a\r\nb"}}}, kernel.CodeValidation, "steps[0].detail"},
		{"a patch of 201 steps", started(t), Patch{Version: 3, Steps: manySteps(MaxSteps+1, "n")}, kernel.CodeValidation, "steps"},
		{"a patch that makes the document 201 steps", full, Patch{Version: 3, Steps: manySteps(3, "n")}, kernel.CodeValidation, "steps"},

		{"output over 256 KiB", started(t), Patch{Version: 3, Output: str(strings.Repeat("o", MaxOutputBytes+1))}, kernel.CodeValidation, "output"},
		{"an append past 256 KiB", full, Patch{Version: 3, OutputAppend: "!"}, kernel.CodeValidation, "output_append"},
		{"output with an escape character", started(t), Patch{Version: 3, Output: str("\x1b[31mred")}, kernel.CodeValidation, "output"},
		{"output with DEL", started(t), Patch{Version: 3, Output: str("a\x7f")}, kernel.CodeValidation, "output"},
		{"output with a NUL", started(t), Patch{Version: 3, OutputAppend: "a\x00"}, kernel.CodeValidation, "output_append"},
		{"output in invalid UTF-8", started(t), Patch{Version: 3, OutputAppend: "\xe2\x82"}, kernel.CodeValidation, "output_append"},
	}
	for _, tt := range tests {
		t.Run("refuses "+tt.name, func(t *testing.T) {
			got, err := Apply(tt.doc, tt.patch)
			var ke *kernel.Error
			if !errors.As(err, &ke) || ke.Code != tt.code || ke.Field != tt.field {
				t.Fatalf("err = %#v, want %s on %q", err, tt.code, tt.field)
			}
			if !reflect.DeepEqual(got, tt.doc) {
				t.Fatalf("the refused patch changed the document: %+v", got)
			}
			// ApplyHead refuses it alike, from the output's length alone.
			head := tt.doc
			head.Output = ""
			_, n, err := ApplyHead(head, len(tt.doc.Output), tt.patch)
			if !errors.As(err, &ke) || ke.Code != tt.code || ke.Field != tt.field || n != len(tt.doc.Output) {
				t.Fatalf("ApplyHead: err = %#v, %d bytes; want %s on %q", err, n, tt.code, tt.field)
			}
		})
	}
	t.Run("says which version to send", func(t *testing.T) {
		_, err := Apply(started(t), Patch{Version: 7})
		if err == nil || !strings.Contains(err.Error(), "next patch has version 3") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestMerge holds the property the fan-out relies on: applying Merge(a, b) equals applying a
// and then b.
func TestMerge(t *testing.T) {
	pairs := []struct {
		name string
		a, b Patch
	}{
		{"two appends", Patch{Version: 3, OutputAppend: " wor"}, Patch{Version: 4, OutputAppend: "ld"}},
		{"an append and then a replace", Patch{Version: 3, OutputAppend: "x"}, Patch{Version: 4, Output: str("new")}},
		{"a replace and then an append", Patch{Version: 3, Output: str("new")}, Patch{Version: 4, OutputAppend: " text"}},
		{"a replace with an append, twice", Patch{Version: 3, Output: str("a"), OutputAppend: "b"}, Patch{Version: 4, Output: str("c"), OutputAppend: "d"}},
		{"a replace with an append, then an append", Patch{Version: 3, Output: str("a"), OutputAppend: "b"}, Patch{Version: 4, OutputAppend: "c"}},
		{"two status lines", Patch{Version: 3, Status: str("one")}, Patch{Version: 4, Status: str("two")}},
		{"a status line and then none", Patch{Version: 3, Status: str("one")}, Patch{Version: 4}},
		{"no status line and then a cleared one", Patch{Version: 3}, Patch{Version: 4, Status: str("")}},
		{"a new step and then an update of it", Patch{Version: 3, Steps: []Step{{ID: "s3", Kind: StepToolCall, Title: "fetch"}}}, Patch{Version: 4, Steps: []Step{{ID: "s3", Status: StepDone, Detail: "200 OK"}}}},
		{"updates of a known step in both", Patch{Version: 3, Steps: []Step{{ID: "s1", Title: "Plan"}}}, Patch{Version: 4, Steps: []Step{{ID: "s1", Status: StepDone}}}},
		{"a known step after new ones", Patch{Version: 3, Steps: []Step{{ID: "n1", Kind: StepTask}, {ID: "n2", Kind: StepTask}}}, Patch{Version: 4, Steps: []Step{{ID: "n3", Kind: StepTask}, {ID: "s1", Status: StepDone}, {ID: "n1", Status: StepFailed}}}},
		{"new steps in both", Patch{Version: 3, Steps: []Step{{ID: "n1", Kind: StepTask}}}, Patch{Version: 4, Steps: []Step{{ID: "n2", Kind: StepThought}}}},
		{"everything at once", Patch{Version: 3, Status: str("a"), Steps: []Step{{ID: "s2", Detail: "d"}}, OutputAppend: "1"}, Patch{Version: 4, Status: str("b"), Steps: []Step{{ID: "s2", Kind: StepMessage}, {ID: "s4", Kind: StepThought}}, Output: str("2"), OutputAppend: "3"}},
		{"two empty patches", Patch{Version: 3}, Patch{Version: 4}},
	}
	for _, tt := range pairs {
		t.Run("merges "+tt.name, func(t *testing.T) {
			doc := started(t)
			want := mustApply(t, doc, tt.a, tt.b)
			merged, ok := Merge(tt.a, tt.b)
			if !ok {
				t.Fatal("not merged")
			}
			if merged.BaseVersion() != doc.Version || merged.Version != tt.b.Version {
				t.Fatalf("merged patch from %d to %d", merged.BaseVersion(), merged.Version)
			}
			if got := mustApply(t, doc, merged); !reflect.DeepEqual(got, want) {
				t.Fatalf("merged  %+v\none by one %+v", got, want)
			}
		})
	}

	t.Run("refuses patches that do not follow each other", func(t *testing.T) {
		for _, b := range []int{3, 5, 2} {
			if _, ok := Merge(Patch{Version: 3}, Patch{Version: b}); ok {
				t.Errorf("merged 3 with %d", b)
			}
		}
	})
	t.Run("merges a merged patch with the next", func(t *testing.T) {
		ab, _ := Merge(Patch{Version: 3, OutputAppend: "a"}, Patch{Version: 4, OutputAppend: "b"})
		abc, ok := Merge(ab, Patch{Version: 5, OutputAppend: "c"})
		if !ok || abc.BaseVersion() != 2 {
			t.Fatalf("ok %v, base %d", ok, abc.BaseVersion())
		}
		if _, ok := Merge(Patch{Version: 2}, ab); !ok {
			t.Fatal("a merged patch does not follow the one before it")
		}
		if got := mustApply(t, started(t), abc); got.Output != "Helloabc" || got.Version != 5 {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("a merged patch applies only to its base version", func(t *testing.T) {
		ab, _ := Merge(Patch{Version: 3}, Patch{Version: 4})
		doc := mustApply(t, started(t), Patch{Version: 3})
		if _, err := Apply(doc, ab); kernel.CodeOf(err) != CodeRunVersionConflict {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("does not share steps with its inputs", func(t *testing.T) {
		a := Patch{Version: 3, Status: str("a"), Steps: []Step{{ID: "s1", Title: "a"}}, Output: str("a")}
		b := Patch{Version: 4, Steps: []Step{{ID: "s1", Title: "b"}}}
		merged, _ := Merge(a, b)
		merged.Steps[0].Title = "changed"
		*merged.Status = "changed"
		*merged.Output = "changed"
		if a.Steps[0].Title != "a" || *a.Status != "a" || *a.Output != "a" {
			t.Fatalf("a changed: %+v", a)
		}
	})
}

// TestMergeRandomized applies random runs of valid patches one by one and merged, and compares.
// The seed is fixed, so a failure repeats.
func TestMergeRandomized(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []string{"s1", "s2", "s3", "s4", "s5"}
	lines := []string{"", "a", "bc", "ü"}
	texts := []string{"", "a", "bc", "ü\n", "\tx"}
	kinds := []StepKind{"", StepThought, StepToolCall, StepMessage, StepTask}
	statuses := []StepStatus{"", StepPending, StepRunning, StepDone, StepFailed}
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	// randomPatch makes a patch for doc; a step new to doc gets a kind, as Apply requires.
	randomPatch := func(doc Document) Patch {
		p := Patch{Version: doc.Version + 1}
		if rng.IntN(3) == 0 {
			p.Status = str(pick(lines))
		}
		for _, i := range rng.Perm(len(ids))[:rng.IntN(3)] {
			s := Step{ID: ids[i], Kind: kinds[rng.IntN(len(kinds))], Title: pick(lines), Status: statuses[rng.IntN(len(statuses))], Detail: pick(texts)}
			if s.Kind == "" && indexOfStep(doc.Steps, s.ID) < 0 {
				s.Kind = StepThought
			}
			p.Steps = append(p.Steps, s)
		}
		if rng.IntN(4) == 0 {
			p.Output = str(pick(texts))
		}
		if rng.IntN(2) == 0 {
			p.OutputAppend = pick(texts)
		}
		return p
	}

	const rounds = 3000
	for round := 0; round < rounds; round++ {
		doc := Document{}
		for range rng.IntN(4) {
			doc = mustApply(t, doc, randomPatch(doc))
		}
		want := doc
		var merged Patch
		for i := range 2 + rng.IntN(4) {
			p := randomPatch(want)
			want = mustApply(t, want, p)
			if i == 0 {
				merged = p
				continue
			}
			var ok bool
			if merged, ok = Merge(merged, p); !ok {
				t.Fatalf("round %d: patch %d does not follow", round, i)
			}
		}
		got, err := Apply(doc, merged)
		if err != nil {
			t.Fatalf("round %d: the merged patch is refused: %v\ndoc %+v\nmerged %+v", round, err, doc, merged)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d:\nmerged    %+v\none by one %+v", round, got, want)
		}
	}
}
