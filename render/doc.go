// Package render holds every human-facing format: the lineage tree, tables,
// Graphviz and Mermaid output, reshard previews, the hot-shard and lag
// reports, record lines and the interactive dashboard (render/dashboard). Functions take an io.Writer and
// options (width, colour, clock); colours are named in theme.go.
//
// Imports: lineage, reshard (plan and hot-shard report types), tail
// (record types), internal/consumer (lag report types), internal/text and
// internal/swar (shared helpers), lipgloss, tablewriter and the standard
// library. It never talks to the service.
package render
