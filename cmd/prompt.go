package cmd

import (
	"bufio"
	"fmt"
	"strings"
)

// requireConfirmable fails at validation (exit 2, nothing sent) when a
// mutating command cannot ask and was not given --yes.
func requireConfirmable(canPrompt, yes, dryRun bool) error {
	if yes || dryRun || canPrompt {
		return nil
	}
	return usageErrorf("stdin is not a terminal: pass --yes to confirm, or --dry-run to only preview")
}

// confirm asks a yes/no question on stderr; only "y" or "yes" is yes.
// Declining returns errDeclined (exit 130).
func (f *Factory) confirm(question string) error {
	fmt.Fprintf(f.IO.ErrOut, "%s [y/N] ", question)
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(f.IO.ErrOut)
		return errDeclined
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errDeclined
}
