package dashboard

import (
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/kinesis-shards/kinesis-shards/render"
)

// lineInput is a one-line text field (the filter, a split percentage).
// bubbles/textinput would pull in a clipboard module for paste; these
// fields need typing, backspace and ctrl+u only.
type lineInput struct {
	prompt string
	value  string
	limit  int
}

// update applies a key; submit is enter, cancel is esc.
func (in *lineInput) update(k tea.KeyMsg) (submit, cancel bool) {
	switch k.Type {
	case tea.KeyEnter:
		return true, false
	case tea.KeyEsc:
		return false, true
	case tea.KeyBackspace, tea.KeyCtrlH:
		if in.value != "" {
			_, n := utf8.DecodeLastRuneInString(in.value)
			in.value = in.value[:len(in.value)-n]
		}
	case tea.KeyCtrlU:
		in.value = ""
	case tea.KeySpace:
		in.add(" ")
	case tea.KeyRunes:
		if !k.Paste || len(k.Runes) < 200 {
			in.add(string(k.Runes))
		}
	}
	return false, false
}

func (in *lineInput) add(s string) {
	limit := in.limit
	if limit <= 0 {
		limit = 128
	}
	for _, r := range s {
		if r < 0x20 || utf8.RuneCountInString(in.value) >= limit {
			continue
		}
		in.value += string(r)
	}
}

// view is the prompt, the value and a block cursor.
func (in *lineInput) view(th render.Theme) string {
	return th.Header.Render(in.prompt) + in.value + th.Accent.Render("█")
}
