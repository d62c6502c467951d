// Package dashboard is the interactive terminal dashboard of
// `kinesis-shards dashboard` (bubbletea).
//
// One root Model (model.go: Init, Update, resize, layout, the keys) owns
// small components, each with its own Update/View/SetSize and key map: the
// stream picker, the lineage tree pane (render.TreeLines, scrollable, the
// selected shard highlighted), the shard table (state, key-space share,
// sampled records/s and bytes/s in, how far behind the sampling reader
// is, the checkpoint position of a checkpoint file, a consumer's lag; one
// entry per column),
// the live record pane, and the split/merge dialog with its preview and
// confirmation, which hands back what only the root can do (plan, sample,
// run, cancel). Besides its keys, the root routes each message to the part
// it belongs to, each with its state in a struct of its own: the open
// stream's listing and refreshes (stream.go), the sampling reader
// (reader.go), and the split/merge flow (action.go).
//
// The dashboard reaches the service only through Backend, an interface it
// declares in the domain's types (list streams, describe, list shards,
// wait for ACTIVE, quota, sample, reshard, the sampling reader, the
// checkpoint file, the lease overlay and a consumer's lag, read with each
// listing); cmd implements it with the
// real clients, tests in memory. Every call happens in a tea.Cmd, never
// inside Update: the listing is refreshed on a timer, the live figures come
// from Backend.Read (cmd's is a tail from the tip of every open shard, with
// tail's pacing: at most one GetRecords per shard per poll interval while
// caught up, never more than five a second), and a reshard's progress
// events arrive as messages. A step whose call failed is looked for in a
// listing by the executor itself (reshard.EventCheck, Result.Lost), as for
// split and merge: the answer may be all that was lost.
//
// Styles come from render.Theme only, so a theme without colour (NO_COLOR,
// --no-color) gives plain text; the selected row also carries a text mark
// (▸), so nothing depends on colour.
//
// Imports: render, lineage, reshard, tail, internal/kstream,
// internal/consumer (lag report types), internal/text, bubbletea,
// bubbles (key, spinner), x/ansi and the standard library; no AWS SDK
// package. Nothing here reads flags or the environment: cmd/dashboard.go
// does that and fills Options.
package dashboard
