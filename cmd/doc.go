// Package cmd is the command line: the cobra tree, global flags, AWS
// configuration and clients, prompts, and the mapping from errors to one
// clear sentence and an exit code. It is the only package that reads flags
// or the environment, looks at the terminal, or builds SDK clients.
//
// Each command is an Options struct filled by its cobra constructor and a
// runX(ctx, opts) function that does the work, so tests can call runX with a
// fake client and buffers (see IOStreams).
//
// Imports: every other package of the module.
package cmd
