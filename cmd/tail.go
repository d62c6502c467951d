package cmd

import "github.com/spf13/cobra"

// newTailCmd is a placeholder until the command lands.
func newTailCmd(f *Factory) *cobra.Command {
	return &cobra.Command{Use: "tail", Hidden: true, RunE: markRan(func(*cobra.Command, []string) error {
		return usageErrorf("tail is not built yet")
	})}
}
