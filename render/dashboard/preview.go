package dashboard

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// previewLines renders a plan with render.Preview, the preview `split` and
// `merge` print: what the plan does, the open shards before and after with
// their hash ranges, key-space and sampled traffic shares, the API calls and
// the notes.
func previewLines(p *reshard.Plan, th render.Theme) []string {
	var b bytes.Buffer
	if err := render.Preview(&b, p, render.PreviewOptions{Theme: th}); err != nil {
		return []string{th.Err.Render("cannot show the preview: " + err.Error())}
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}

// confirmQuestion is the question the commands ask before sending a plan.
func confirmQuestion(p *reshard.Plan) string {
	calls := "1 call"
	if n := len(p.Steps); n != 1 {
		calls = fmt.Sprintf("%d calls", n)
	}
	return fmt.Sprintf("Send %s to stream %s?", calls, p.Stream)
}
