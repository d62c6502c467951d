package cmd

import "github.com/spf13/cobra"

// registerCompletions attaches live completions to the command tree
// (placeholder until completions land).
func registerCompletions(root *cobra.Command, f *Factory) {}
