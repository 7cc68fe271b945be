package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	botclient "bothy.dev/bothy/client"
)

// TestAgentFiles is files between a person and an agent built on the Go client, on the real
// binary: a person mentions the agent with a file attached; the invocation names the file and
// the agent downloads it with its own token, uploads two files of its own (one in a single
// request, one in resumable parts) and answers in the thread with them attached; the person
// downloads them. Whether an agent may read a file is its rights on the file's channel: another
// agent with none, and this one for a file of a channel it may not read, get 404.
func TestAgentFiles(t *testing.T) {
	t.Parallel()
	onEachEngine(t, true, func(t *testing.T, eng engine) {
		w := mustWorld(t, eng)
		w.in.owner.mustGrant(t, w.shared.ID, w.aliceU.ID, "invoke")
		a, _, start := w.mustPostingAgent(t, "filer")
		outsider, _ := w.in.mustCreateAgent(t, "outsider")
		th := w.in.owner.mustCreateThread(t, w.shared.ID, "Files", "for the filer").Thread.ID

		// A file of the owner's private channel, which the filer may not read.
		secret := w.in.owner.mustUpload(t, "secret.txt", "text/plain", []byte("not for agents"))
		w.in.owner.mustPostFiles(t, w.privTh.Thread.ID, "mine", secret.ID)

		notes := []byte("line one\nline two\n")
		up := w.alice.mustUpload(t, "notes.txt", "text/plain", notes)

		summary := "2 lines, " + fmt.Sprint(len(notes)) + " bytes"
		report := bytes.Repeat([]byte("report "), 1000)
		outsiderClient := botclient.New(w.in.srv.public, outsider.Token)
		checks := make(chan error, 1)
		runAgent(t, botclient.NewAgent(w.in.srv.public, a.Token), func(ctx context.Context, inv *botclient.Invocation) error {
			if _, err := inv.Start(ctx); err != nil {
				return err
			}
			err := func() error {
				if len(inv.Attachments) != 1 {
					return fmt.Errorf("the invocation names %d files: %+v", len(inv.Attachments), inv.Attachments)
				}
				att := inv.Attachments[0]
				if att.ID != up.ID || att.Name != "notes.txt" || !strings.HasPrefix(att.ContentType, "text/plain") || att.Size != int64(len(notes)) {
					return fmt.Errorf("the invocation's file %+v", att)
				}
				if len(inv.Message.Attachments) != 1 || inv.Message.Attachments[0].ID != up.ID {
					return fmt.Errorf("the invoking message's files %+v", inv.Message.Attachments)
				}
				d, err := inv.Client().DownloadFile(ctx, att.ID)
				if err != nil {
					return fmt.Errorf("the agent downloads the file: %w", err)
				}
				defer d.Close()
				got, err := io.ReadAll(d)
				if err != nil || !bytes.Equal(got, notes) || d.Name != "notes.txt" || d.SHA256 != up.SHA256 {
					return fmt.Errorf("the agent's download %q %v %+v", got, err, d)
				}
				if f, err := inv.Client().File(ctx, att.ID); err != nil || f.MessageID != inv.Message.ID || f.ThreadID != inv.ThreadID {
					return fmt.Errorf("the file's metadata %+v %v", f, err)
				}
				if _, err := inv.Client().DownloadFile(ctx, secret.ID); !botclient.IsCode(err, "not_found") {
					return fmt.Errorf("a file of a channel the agent may not read: %v", err)
				}
				if _, err := outsiderClient.DownloadFile(ctx, att.ID); !botclient.IsCode(err, "not_found") {
					return fmt.Errorf("an agent with no right on the channel downloads: %v", err)
				}
				if _, err := outsiderClient.File(ctx, att.ID); !botclient.IsCode(err, "not_found") {
					return fmt.Errorf("an agent with no right on the channel reads the metadata: %v", err)
				}
				return nil
			}()
			select {
			case checks <- err:
			default: // a redelivery: the first one was checked
			}

			one, err := inv.Client().UploadFile(ctx, "summary.txt", "text/plain", strings.NewReader(summary))
			if err != nil {
				return err
			}
			two, err := inv.Client().UploadFileResumable(ctx, "report.txt", "text/plain", int64(len(report)), bytes.NewReader(report))
			if err != nil {
				return err
			}
			m, err := inv.ReplyWith(ctx, botclient.NewMessage{Content: "here is what I found", AttachmentIDs: []string{one.ID, two.ID}})
			if err != nil {
				return err
			}
			if len(m.Attachments) != 2 || m.Attachments[0].ID != one.ID || m.Attachments[1].ID != two.ID || m.RunID != inv.RunID {
				return fmt.Errorf("the answer %+v", m)
			}
			return inv.Finish(ctx, botclient.Succeeded, nil)
		})

		mid := w.alice.mustPostFiles(t, th, "@filer what is in here?", up.ID)["id"].(string)
		select {
		case err := <-checks:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the agent got no invocation within 20s")
		}
		answer := answerOf(t, w.alice, th, start)
		if r := runOf(t, w.alice, answer["run_id"].(string)); r.TriggerMessageID == nil || *r.TriggerMessageID != mid {
			t.Fatalf("run %+v", r)
		}
		atts, _ := answer["attachments"].([]any)
		if len(atts) != 2 {
			t.Fatalf("the answer carries %v", answer["attachments"])
		}
		for i, want := range [][]byte{[]byte(summary), report} {
			id := atts[i].(map[string]any)["id"].(string)
			r := w.alice.do(t, http.MethodGet, api("files", id, "content"), nil).want(t, http.StatusOK)
			if !bytes.Equal(r.raw, want) {
				t.Fatalf("the person downloads the agent's file %d: %q", i, r.raw)
			}
		}
		// Bob may not read the channel, so not the agent's files either.
		id := atts[0].(map[string]any)["id"].(string)
		if r := w.bob.do(t, http.MethodGet, api("files", id, "content"), nil); r.status != http.StatusNotFound {
			t.Fatalf("a person who may not read the channel: %s", r)
		}
	})
}
