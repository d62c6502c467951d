package cmd

import "github.com/spf13/cobra"

// newScaleCmd is a placeholder until the command lands.
func newScaleCmd(f *Factory) *cobra.Command {
	return &cobra.Command{Use: "scale", Hidden: true, RunE: markRan(func(*cobra.Command, []string) error {
		return usageErrorf("scale is not built yet")
	})}
}
