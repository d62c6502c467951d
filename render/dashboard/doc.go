// Package dashboard is the interactive terminal dashboard of
// `kinesis-shards dashboard` (bubbletea).
//
// One root Model routes messages to small components, each with its own
// Update/View/SetSize and key map: the stream picker, the lineage tree pane
// (render.TreeLines, scrollable, the selected shard highlighted), the shard
// table (state, key-space share, sampled records/s and bytes/s in, how far
// behind the sampling reader is, the checkpoint position of a checkpoint
// file), the live record pane, the split/merge dialog with its preview and
// confirmation, the status line and the help bar.
//
// Every call to the service happens in a tea.Cmd, never inside Update: the
// listing is refreshed on a timer, the live figures come from a tail.Tailer
// started at the tip of every open shard (so it keeps tail's pacing: at most
// one GetRecords per shard per poll interval while caught up, never more than
// five a second), and reshards run through reshard.Executor, whose progress
// events arrive as messages. Styles come from render.Theme only, so a theme
// without colour (NO_COLOR, --no-color) gives plain text; the selected row
// also carries a text mark (▸), so nothing depends on colour.
//
// Imports: render, lineage, reshard, tail, internal/kstream, bubbletea,
// bubbles (key, spinner), lipgloss and x/ansi. Nothing here reads flags or
// the environment: cmd/dashboard.go does that and fills Options.
package dashboard
