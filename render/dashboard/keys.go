package dashboard

import "github.com/charmbracelet/bubbles/key"

// keyMap holds every binding; components match against the ones they own.
type keyMap struct {
	Up, Down, PageUp, PageDown, Home, End key.Binding
	NextPane, PrevPane                    key.Binding
	Enter, Back, Filter                   key.Binding
	Split, Merge, Pause, Refresh          key.Binding
	Help, Quit, ForceQuit                 key.Binding
	Yes, No                               key.Binding
}

func newKeyMap() keyMap {
	return keyMap{
		Up:        key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:      key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:    key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:  key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " "), key.WithHelp("pgdn", "page down")),
		Home:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first")),
		End:       key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last")),
		NextPane:  key.NewBinding(key.WithKeys("tab", "right", "l"), key.WithHelp("tab", "next pane")),
		PrevPane:  key.NewBinding(key.WithKeys("shift+tab", "left", "h"), key.WithHelp("shift+tab", "previous pane")),
		Enter:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back / clear filter")),
		Filter:    key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Split:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "split")),
		Merge:     key.NewBinding(key.WithKeys("m"), key.WithHelp("m", "merge")),
		Pause:     key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
		Refresh:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Help:      key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:      key.NewBinding(key.WithKeys("q"), key.WithHelp("q", "quit")),
		ForceQuit: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "quit")),
		Yes:       key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		No:        key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n/esc", "no")),
	}
}
