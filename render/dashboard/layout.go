package dashboard

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// fit makes s exactly w cells wide: cut with "…" when longer, padded with
// blanks when shorter. ANSI sequences are kept and not counted.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	if n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// block makes lines exactly h lines of exactly w cells.
func block(lines []string, w, h int) []string {
	out := make([]string, h)
	for i := range out {
		if i < len(lines) {
			out[i] = fit(lines[i], w)
		} else {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
	}
	return out
}

// besides joins two blocks of the same height with sep between them.
func besides(left []string, sep string, right []string) []string {
	out := make([]string, max(len(left), len(right)))
	for i := range out {
		var l, r string
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		out[i] = l + sep + r
	}
	return out
}

// trimRight drops trailing blanks that carry no style, so screens and
// golden files hold no invisible padding.
func trimRight(s string) string { return strings.TrimRight(s, " ") }

// clamp keeps v within lo..hi (hi < lo gives lo).
func clamp(v, lo, hi int) int {
	if v > hi {
		v = hi
	}
	if v < lo {
		v = lo
	}
	return v
}

// scrollTo returns the first visible row so that cursor is within a window
// of h rows starting at offset.
func scrollTo(offset, cursor, h, n int) int {
	if h <= 0 {
		return 0
	}
	if cursor < offset {
		offset = cursor
	}
	if cursor >= offset+h {
		offset = cursor - h + 1
	}
	return clamp(offset, 0, max(n-h, 0))
}

// moveCursor is where a list key takes a cursor over n rows shown page
// rows at a time (up, down, page up and down, home, end), clamped to the
// rows; ok is false for any other key. The picker, the tree and the shard
// table move the same way.
func moveCursor(keys keyMap, k tea.KeyMsg, cursor, page, n int) (_ int, ok bool) {
	switch {
	case key.Matches(k, keys.Up):
		cursor--
	case key.Matches(k, keys.Down):
		cursor++
	case key.Matches(k, keys.PageUp):
		cursor -= page
	case key.Matches(k, keys.PageDown):
		cursor += page
	case key.Matches(k, keys.Home):
		cursor = 0
	case key.Matches(k, keys.End):
		cursor = n - 1
	default:
		return clamp(cursor, 0, n-1), false
	}
	return clamp(cursor, 0, n-1), true
}
