package dashboard

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/render"
)

// picker is the filterable list of streams shown when no STREAM is given.
type picker struct {
	th     render.Theme
	keys   keyMap
	names  []string
	loaded bool
	filter string
	// shown is names filtered by filter.
	shown          []string
	cursor, offset int
	w, h           int
}

func newPicker(th render.Theme, keys keyMap) picker { return picker{th: th, keys: keys} }

// SetSize gives the picker its area.
func (p *picker) SetSize(w, h int) {
	p.w, p.h = w, h
	p.offset = scrollTo(p.offset, p.cursor, p.listHeight(), len(p.shown))
}

func (p *picker) listHeight() int { return max(p.h-2, 1) }

// setNames replaces the list, keeping the cursor on the same name.
func (p *picker) setNames(names []string) {
	cur := p.current()
	p.names, p.loaded = names, true
	p.applyFilter(cur)
}

// setFilter filters the list by a case-insensitive substring.
func (p *picker) setFilter(f string) {
	cur := p.current()
	p.filter = f
	p.applyFilter(cur)
}

func (p *picker) applyFilter(keep string) {
	p.shown = p.shown[:0]
	f := strings.ToLower(p.filter)
	for _, n := range p.names {
		if f == "" || strings.Contains(strings.ToLower(n), f) {
			p.shown = append(p.shown, n)
		}
	}
	p.cursor = 0
	for i, n := range p.shown {
		if n == keep {
			p.cursor = i
		}
	}
	p.offset = scrollTo(p.offset, p.cursor, p.listHeight(), len(p.shown))
}

// current is the stream under the cursor ("" when none).
func (p *picker) current() string {
	if p.cursor < len(p.shown) {
		return p.shown[p.cursor]
	}
	return ""
}

// Update moves the cursor; chosen is the stream picked with enter.
func (p *picker) Update(k tea.KeyMsg) (chosen string) {
	if key.Matches(k, p.keys.Enter) {
		return p.current()
	}
	n := len(p.shown)
	p.cursor, _ = moveCursor(p.keys, k, p.cursor, p.listHeight(), n)
	p.offset = scrollTo(p.offset, p.cursor, p.listHeight(), n)
	return ""
}

// View draws the list: a title line, the streams, and a count.
func (p *picker) View() []string {
	th := p.th
	lines := []string{th.Header.Render("Pick a stream") + th.Dim.Render("  (enter opens it, / filters)")}
	switch {
	case !p.loaded:
		lines = append(lines, th.Dim.Render("  listing streams…"))
	case len(p.names) == 0:
		lines = append(lines, th.Dim.Render("  no streams in this region: create one with `kinesis-shards create NAME --shards N`"))
	case len(p.shown) == 0:
		lines = append(lines, th.Dim.Render(fmt.Sprintf("  no stream matches %q", p.filter)))
	}
	h := p.listHeight()
	end := min(p.offset+h, len(p.shown))
	for i := p.offset; i < end; i++ {
		name := p.shown[i]
		if i == p.cursor {
			lines = append(lines, th.Select.Render(fit("▸ "+name, p.w)))
		} else {
			lines = append(lines, "  "+name)
		}
	}
	if p.loaded && len(p.names) > 0 {
		count := fmt.Sprintf("%d streams", len(p.names))
		if p.filter != "" {
			count = fmt.Sprintf("%d of %d streams match %q", len(p.shown), len(p.names), p.filter)
		}
		for len(lines) < p.h-1 {
			lines = append(lines, "")
		}
		lines = append(lines, th.Dim.Render(count))
	}
	return block(lines, p.w, p.h)
}
