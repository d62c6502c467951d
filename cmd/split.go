package cmd

import "github.com/spf13/cobra"

// newSplitCmd is a placeholder until the command lands.
func newSplitCmd(f *Factory) *cobra.Command {
	return &cobra.Command{Use: "split", Hidden: true, RunE: markRan(func(*cobra.Command, []string) error {
		return usageErrorf("split is not built yet")
	})}
}
