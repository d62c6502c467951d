package render

import (
	"io"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Theme names every colour the tool uses. With colour off each style
// renders its text unchanged, so output without a terminal (and golden
// files) carries no escape codes. Every state also has a text mark, so
// nothing depends on colour alone.
type Theme struct {
	Color bool

	Open    lipgloss.Style // open shards
	Closed  lipgloss.Style // closed shards
	Trimmed lipgloss.Style // trimmed parents
	Key     lipgloss.Style // --key path, highlights
	Header  lipgloss.Style // table headers, titles
	Dim     lipgloss.Style // secondary text (ranges, sequence numbers)
	Warn    lipgloss.Style // warnings, things that will change
	Err     lipgloss.Style // errors, refusals
	Added   lipgloss.Style // shards a plan creates
	Removed lipgloss.Style // shards a plan closes
	Accent  lipgloss.Style // partition keys, ids in record lines
	Border  lipgloss.Style // panes and separators (dashboard)
	Select  lipgloss.Style // the selected row (dashboard)
}

// NewTheme returns the theme; color false gives plain text.
func NewTheme(color bool) Theme {
	r := lipgloss.NewRenderer(io.Discard)
	if color {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	r.SetHasDarkBackground(true)
	s := r.NewStyle
	return Theme{
		Color:   color,
		Open:    s().Foreground(lipgloss.Color("42")),
		Closed:  s().Foreground(lipgloss.Color("245")),
		Trimmed: s().Foreground(lipgloss.Color("240")).Italic(true),
		Key:     s().Foreground(lipgloss.Color("214")).Bold(true),
		Header:  s().Bold(true),
		Dim:     s().Foreground(lipgloss.Color("244")),
		Warn:    s().Foreground(lipgloss.Color("214")),
		Err:     s().Foreground(lipgloss.Color("203")).Bold(true),
		Added:   s().Foreground(lipgloss.Color("42")),
		Removed: s().Foreground(lipgloss.Color("203")),
		Accent:  s().Foreground(lipgloss.Color("75")),
		Border:  s().Foreground(lipgloss.Color("238")),
		Select:  s().Reverse(true),
	}
}
