package cmd

import "github.com/spf13/cobra"

// newMergeCmd is a placeholder until the command lands.
func newMergeCmd(f *Factory) *cobra.Command {
	return &cobra.Command{Use: "merge", Hidden: true, RunE: markRan(func(*cobra.Command, []string) error {
		return usageErrorf("merge is not built yet")
	})}
}
