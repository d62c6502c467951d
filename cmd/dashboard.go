package cmd

import "github.com/spf13/cobra"

// newDashboardCmd is a placeholder until the command lands.
func newDashboardCmd(f *Factory) *cobra.Command {
	return &cobra.Command{Use: "dashboard", Hidden: true, RunE: markRan(func(*cobra.Command, []string) error {
		return usageErrorf("dashboard is not built yet")
	})}
}
