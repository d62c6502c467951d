package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinesis-shards/kinesis-shards/completions"
)

// fileFlags complete file names.
var fileFlags = map[string]bool{"checkpoint": true}

// shardFlag completes the shard ids of the command's STREAM argument.
const shardFlag = "shard"

// consumerFlags complete the consumer names of the command's STREAM
// argument (consumers --deregister, and a --consumer flag wherever it is).
var consumerFlags = map[string]bool{"consumer": true, "deregister": true}

// openShardCommands act on open shards only: their SHARD arguments offer
// no closed shard.
var openShardCommands = map[string]bool{"split": true, "merge": true}

// registerCompletions attaches completions to every command in the tree, by
// convention, so that commands written later get them without more code:
//
//   - positional arguments named in Use ("split STREAM SHARD"): STREAM
//     completes stream names, SHARD the shard ids of that stream;
//   - a flag named shard: the shard ids of the command's STREAM argument;
//   - consumer, deregister: the consumer names of that stream;
//   - checkpoint: file names;
//   - output, format, method: the values in enumFlagValues;
//   - any other flag that takes a value (a table name, a key, a count, a
//     duration): no candidates and no file names.
//
// A command or flag that already has a completion function keeps it. The
// default `completion` command is added here, with install instructions,
// so that it also appears in the generated docs.
func registerCompletions(root *cobra.Command, f *Factory) {
	live := &completions.Live{Client: func(ctx context.Context, stream string) (completions.API, error) {
		// f.Global holds --region, --profile and --endpoint-url as typed:
		// cobra parses the flags before it calls a completion function.
		c, _, err := f.Kinesis(ctx, stream)
		if err != nil {
			return nil, err
		}
		return c, nil
	}}
	root.InitDefaultCompletionCmd()
	describeCompletionCmd(root)
	walk(root, func(c *cobra.Command) {
		params := completions.ParseUse(c.Use)
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 && hasLiveParam(params) {
			c.ValidArgsFunction = live.Positional(params, openShardCommands[c.Name()])
		}
		register := func(fl *pflag.Flag) {
			if _, ok := c.GetFlagCompletionFunc(fl.Name); ok {
				return
			}
			var fn cobra.CompletionFunc
			switch {
			case fl.Name == shardFlag:
				fn = live.Shards(func(_ *cobra.Command, args []string) completions.ShardQuery {
					return completions.ShardQuery{Stream: completions.StreamArg(params, args)}
				})
			case consumerFlags[fl.Name]:
				fn = live.Consumers(func(ctx context.Context, stream string) (completions.ConsumerAPI, error) {
					c, _, err := f.Kinesis(ctx, stream)
					if err != nil {
						return nil, err
					}
					return c, nil
				}, func(_ *cobra.Command, args []string) string { return completions.StreamArg(params, args) })
			case fileFlags[fl.Name]:
				fn = completions.Files()
			case enumFlagValues[fl.Name] != nil:
				fn = completions.EnumByCommand(enumFlagValues[fl.Name])
			case fl.Value.Type() == "bool":
				return
			default:
				// A table name, a key, a count, a duration: never a file
				// of the current directory.
				fn = cobra.NoFileCompletions
			}
			// It fails only for a flag that has a function already.
			_ = c.RegisterFlagCompletionFunc(fl.Name, fn)
		}
		c.Flags().VisitAll(register)
		c.PersistentFlags().VisitAll(register)
	})
}

func hasLiveParam(params []string) bool {
	for _, p := range params {
		if p == completions.ParamStream || p == completions.ParamShard {
			return true
		}
	}
	return false
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// describeCompletionCmd replaces the help of cobra's default completion
// command with install instructions for this tool.
func describeCompletionCmd(root *cobra.Command) {
	var comp *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			comp = c
		}
	}
	if comp == nil {
		return
	}
	comp.Short = "Print the shell completion script for bash, zsh, fish or powershell"
	comp.Long = `Print the completion script for a shell. Completions include command and
flag names, the values of -o/--output, --format and --method, and, looked up
live, the names of your streams and the ids of a stream's shards (open
shards first, each with its state and share of the key space).

Live lookups use the --region, --profile and --endpoint-url already typed on
the command line (else the environment and AWS config, as every command
does) and give up quietly after about a second and a half: a slow or
unreachable endpoint, or missing credentials, gives no candidates and no
error.

See the help of each shell's subcommand for how to install its script.
Installed from a .deb or .rpm package, the bash, zsh and fish scripts are
already in place; the release archives carry them under completions/.`
	long := map[string]string{
		"bash": `Print the bash completion script. It needs the bash-completion package
(version 2; on macOS: brew install bash-completion@2).

To try it in the current shell:

    source <(kinesis-shards completion bash)

To install it for your user (bash-completion loads it on first use):

    mkdir -p ~/.local/share/bash-completion/completions
    kinesis-shards completion bash > ~/.local/share/bash-completion/completions/kinesis-shards

or for every user:

    kinesis-shards completion bash | sudo tee /etc/bash_completion.d/kinesis-shards > /dev/null

With Homebrew on macOS:

    kinesis-shards completion bash > "$(brew --prefix)/etc/bash_completion.d/kinesis-shards"

Then start a new shell.`,
		"zsh": `Print the zsh completion script.

If completion is not yet enabled in your zsh, enable it once:

    echo 'autoload -U compinit; compinit' >> ~/.zshrc

To try it in the current shell:

    source <(kinesis-shards completion zsh)

To install it, write it as _kinesis-shards into a directory of your fpath,
for example:

    mkdir -p ~/.zfunc
    kinesis-shards completion zsh > ~/.zfunc/_kinesis-shards
    # and in ~/.zshrc, before compinit:
    fpath=(~/.zfunc $fpath)

With Homebrew on macOS:

    kinesis-shards completion zsh > "$(brew --prefix)/share/zsh/site-functions/_kinesis-shards"

Then start a new shell (run 'rm -f ~/.zcompdump; compinit' if an older
version was installed before).`,
		"fish": `Print the fish completion script.

To try it in the current shell:

    kinesis-shards completion fish | source

To install it:

    kinesis-shards completion fish > ~/.config/fish/completions/kinesis-shards.fish

Then start a new shell.`,
		"powershell": `Print the PowerShell completion script.

To try it in the current shell:

    kinesis-shards completion powershell | Out-String | Invoke-Expression

To load it in every session, add that line to your profile:

    Add-Content $PROFILE 'kinesis-shards completion powershell | Out-String | Invoke-Expression'`,
	}
	for _, sub := range comp.Commands() {
		if l, ok := long[sub.Name()]; ok {
			sub.Short = "Print the " + sub.Name() + " completion script"
			sub.Long = l
		}
	}
}
