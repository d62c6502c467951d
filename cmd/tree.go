package cmd

import "github.com/spf13/cobra"

// newTreeCmd is a placeholder until the command lands.
func newTreeCmd(f *Factory) *cobra.Command {
	return &cobra.Command{Use: "tree", Hidden: true, RunE: markRan(func(*cobra.Command, []string) error {
		return usageErrorf("tree is not built yet")
	})}
}
