package dashboard

import (
	"encoding/base64"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// maxRecords is how many records the pane keeps.
const maxRecords = 1000

// recordPane shows the latest records the sampling reader delivered, newest
// at the bottom. It follows new records unless scrolled up.
type recordPane struct {
	th   render.Theme
	keys keyMap
	loc  *time.Location
	recs []tail.Record // oldest first, at most maxRecords
	seen int64
	// back is how many records the view is scrolled up from the newest.
	back   int
	filter string
	w, h   int
}

func newRecordPane(th render.Theme, keys keyMap, loc *time.Location) recordPane {
	return recordPane{th: th, keys: keys, loc: loc}
}

// SetSize gives the pane its area (title line excluded).
func (r *recordPane) SetSize(w, h int) { r.w, r.h = w, h }

// add appends a batch; a view scrolled up stays on the same records.
func (r *recordPane) add(batch []tail.Record) {
	r.seen += int64(len(batch))
	if r.back > 0 {
		r.back += r.matching(batch)
	}
	r.recs = append(r.recs, batch...)
	if over := len(r.recs) - maxRecords; over > 0 {
		r.recs = append(r.recs[:0], r.recs[over:]...)
	}
	r.back = clamp(r.back, 0, max(len(r.shown())-r.h, 0))
}

func (r *recordPane) matching(batch []tail.Record) int {
	n := 0
	for i := range batch {
		if r.matches(&batch[i]) {
			n++
		}
	}
	return n
}

// clear forgets every record (another stream).
func (r *recordPane) clear() { r.recs, r.seen, r.back = nil, 0, 0 }

func (r *recordPane) setFilter(f string) { r.filter, r.back = f, 0 }

func (r *recordPane) matches(rec *tail.Record) bool {
	if r.filter == "" {
		return true
	}
	f := strings.ToLower(r.filter)
	return strings.Contains(strings.ToLower(rec.PartitionKey), f) || strings.Contains(strings.ToLower(string(rec.Data)), f) ||
		lineage.ShortID(rec.ShardID) == f
}

func (r *recordPane) shown() []*tail.Record {
	out := make([]*tail.Record, 0, len(r.recs))
	for i := range r.recs {
		if r.matches(&r.recs[i]) {
			out = append(out, &r.recs[i])
		}
	}
	return out
}

// Update scrolls.
func (r *recordPane) Update(k tea.KeyMsg) {
	switch {
	case key.Matches(k, r.keys.Up):
		r.back++
	case key.Matches(k, r.keys.Down):
		r.back--
	case key.Matches(k, r.keys.PageUp):
		r.back += r.h
	case key.Matches(k, r.keys.PageDown):
		r.back -= r.h
	case key.Matches(k, r.keys.Home):
		r.back = len(r.recs)
	case key.Matches(k, r.keys.End):
		r.back = 0
	}
	r.back = clamp(r.back, 0, max(len(r.shown())-r.h, 0))
}

// View draws the newest records that fit (or older ones when scrolled).
func (r *recordPane) View(empty string) []string {
	th := r.th
	shown := r.shown()
	if len(shown) == 0 {
		msg := empty
		if r.filter != "" && len(r.recs) > 0 {
			msg = "no record matches the filter"
		}
		return block([]string{th.Dim.Render("  " + msg)}, r.w, r.h)
	}
	end := len(shown) - r.back
	start := max(end-r.h, 0)
	out := make([]string, 0, r.h)
	keyW := 0
	for _, rec := range shown[start:end] {
		keyW = max(keyW, min(utf8.RuneCountInString(rec.PartitionKey), maxKeyWidth))
	}
	for _, rec := range shown[start:end] {
		out = append(out, r.line(rec, keyW))
	}
	return block(out, r.w, r.h)
}

// maxKeyWidth is the widest partition key column; longer keys are cut.
const maxKeyWidth = 24

// line is "15:04:05.000  SHARD  KEY  DATA", the key padded to keyW.
func (r *recordPane) line(rec *tail.Record, keyW int) string {
	th := r.th
	ts := rec.ArrivalTime.In(r.loc).Format("15:04:05.000")
	key := payload([]byte(rec.PartitionKey))
	if utf8.RuneCountInString(key) > maxKeyWidth {
		key = string([]rune(key)[:maxKeyWidth-1]) + "…"
	}
	return "  " + th.Dim.Render(ts) + "  " + th.Accent.Render(padRight(lineage.ShortID(rec.ShardID), 3)) + "  " +
		th.Key.Render(padRight(key, keyW)) + "  " + payload(rec.Data)
}

func padRight(s string, n int) string {
	if w := utf8.RuneCountInString(s); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

// payload shows data on one line: printable text as it is (control
// characters as ·), anything else as base64.
func payload(b []byte) string {
	const max = 512
	if len(b) > max {
		b = b[:max]
		// Do not let the cut split a character.
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	if !utf8.Valid(b) {
		return "base64:" + base64.StdEncoding.EncodeToString(b)
	}
	return strings.Map(func(c rune) rune {
		if !unicode.IsPrint(c) {
			return '·'
		}
		return c
	}, string(b))
}
