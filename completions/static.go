package completions

import (
	"strings"

	"github.com/spf13/cobra"
)

// Value is one value of an enum flag and what it means.
type Value struct {
	Name, Description string
}

// Enum completes a fixed list of values, in the order given (the default
// first, by convention), keeping those that start with the word typed.
func Enum(values ...Value) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return enumCandidates(values, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// EnumByCommand completes a flag whose values depend on the command that
// takes it, such as the global -o/--output: byCommand is keyed by the
// command's name, and the "" entry serves every command not listed. A
// command with neither gets no candidates.
func EnumByCommand(byCommand map[string][]Value) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		values, ok := byCommand[c.Name()]
		if !ok {
			values = byCommand[""]
		}
		return Enum(values...)(c, args, toComplete)
	}
}

func enumCandidates(values []Value, prefix string) []cobra.Completion {
	var comps []cobra.Completion
	for _, v := range values {
		if strings.HasPrefix(v.Name, prefix) {
			comps = append(comps, withDesc(v.Name, v.Description))
		}
	}
	return comps
}

// Files leaves the completion to the shell's own file-name completion,
// limited to the extensions given (without the dot), if any.
func Files(exts ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(exts) > 0 {
			return exts, cobra.ShellCompDirectiveFilterFileExt
		}
		return nil, cobra.ShellCompDirectiveDefault
	}
}

// The positional parameters a command's Use line may name that have live
// completions.
const (
	ParamStream = "STREAM"
	ParamShard  = "SHARD"
)

// ParseUse returns the positional parameters that a command's Use line
// names, in order: "merge STREAM SHARD SHARD" gives [STREAM SHARD SHARD],
// "dashboard [STREAM]" gives [STREAM], and "create STREAM --shards N |
// --on-demand" gives [STREAM] (flags and what follows them are not
// positional).
func ParseUse(use string) []string {
	words := strings.Fields(use)
	if len(words) < 2 {
		return nil
	}
	var params []string
	for _, w := range words[1:] {
		if strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[-") || w == "|" {
			break
		}
		w = strings.TrimSuffix(strings.Trim(w, "[]"), "...")
		w = strings.Trim(w, "[]")
		if w != "" {
			params = append(params, w)
		}
	}
	return params
}

// Positional completes a command's positional arguments by their names
// (see ParseUse): STREAM completes stream names; SHARD completes the shards
// of the stream named by the first STREAM argument, leaving out shards
// already given, and only open ones when openShards is set. Other names,
// and arguments past the last, get no candidates.
func (l *Live) Positional(params []string, openShards bool) cobra.CompletionFunc {
	streams := l.Streams()
	shards := l.Shards(func(_ *cobra.Command, args []string) ShardQuery {
		q := ShardQuery{OpenOnly: openShards}
		for i, p := range params {
			if i >= len(args) {
				break
			}
			switch {
			case p == ParamStream && q.Stream == "":
				q.Stream = args[i]
			case p == ParamShard:
				q.Exclude = append(q.Exclude, args[i])
			}
		}
		return q
	})
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) >= len(params) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		switch params[len(args)] {
		case ParamStream:
			return streams(c, args, toComplete)
		case ParamShard:
			return shards(c, args, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// StreamArg returns the STREAM argument among args, given the command's
// positional parameters, or "" when it is not there yet.
func StreamArg(params, args []string) string {
	for i, p := range params {
		if p == ParamStream && i < len(args) {
			return args[i]
		}
	}
	return ""
}
