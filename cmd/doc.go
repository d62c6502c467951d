// Package cmd is the command line: the cobra tree, global flags, AWS
// configuration and clients, prompts, and the mapping from errors to one
// clear sentence and an exit code. It is the only package that reads flags
// or the environment, looks at the terminal, or builds SDK clients.
//
// Each command has one shape (options.go): an Options struct with
// complete (arguments, flags, environment), validate (every check, no
// network: a wrong command line is a usage error, exit 2) and run (clients,
// then a runX(ctx, f, api, …) that does the work). Its constructor takes a
// runF in place of run, so the flag tests check argv → Options → validation
// without any client or emulator, and other tests call runX with a fake
// client and buffers (see IOStreams). The enum flags (-o, --format,
// --method) are declared once, in enums.go.
//
// Imports: every other package of the module.
package cmd
