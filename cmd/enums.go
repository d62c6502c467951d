package cmd

import (
	"slices"
	"strings"

	"github.com/kinesis-shards/kinesis-shards/completions"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// enumFlagValues is the one declaration of the enum flags: which values
// -o/--output, --format and --method take on which command. Validation
// (outputFormat, recordFormat, the checks of scale --method and put
// --format), completion and the help of --format and --method are made
// from it; the test of every command's
// help checks that its text names each -o value. The outer key is the
// flag's name, the inner one the command's name; "" is the value list for
// commands not named (streams, create). The default value comes first.
var enumFlagValues = map[string]map[string][]completions.Value{
	"output": {
		"":      {val("table", "a table"), val("json", "one JSON document")},
		"tree":  {val("tree", "the lineage tree"), val("table", "a table of shards"), val("json", "one JSON document"), val("dot", "Graphviz"), val("mermaid", "a Mermaid flowchart")},
		"tail":  recordFormats,
		"put":   {val("text", "a summary"), val("json", "one JSON document")},
		"split": planFormats,
		"merge": planFormats,
		"scale": planFormats,
	},
	"format": {
		"tail": recordFormats,
		"put":  {val("lines", "each line a record"), val("json", "tail -o json lines, each with its keys")},
	},
	"method": {
		"scale": {val("update-shard-count", "one UpdateShardCount call"), val("splits", "SplitShard and MergeShards calls")},
	},
	"by": {
		"scale": {val("bytes", "data and partition key bytes, as the write quota counts them"), val("records", "the number of records")},
	},
}

var (
	recordFormats = []completions.Value{val("text", "readable lines (the default on a terminal)"), val("json", "JSON lines"), val("raw", "the payload and a newline")}
	planFormats   = []completions.Value{val("table", "the preview as tables"), val("json", "the plan as JSON")}
)

func val(name, description string) completions.Value {
	return completions.Value{Name: name, Description: description}
}

// enumNames are the values flag takes on command, the default first.
func enumNames(flag, command string) []string {
	byCommand := enumFlagValues[flag]
	values, ok := byCommand[command]
	if !ok {
		values = byCommand[""]
	}
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = v.Name
	}
	return names
}

// treeFormats are the -o values of `tree`; the first is the default.
var treeFormats = enumNames("output", "tree")

// outputFormat checks -o against the formats of command: "" is its
// default, the first.
func outputFormat(command, given string) (string, error) {
	names := enumNames("output", command)
	if given == "" {
		return names[0], nil
	}
	if !slices.Contains(names, given) {
		return "", usageErrorf("unknown output format %q: use one of %s", given, strings.Join(names, ", "))
	}
	return given, nil
}

// recordFormat checks a record format of tail (--format, or -o).
func recordFormat(given string) (render.RecordFormat, error) {
	names := enumNames("format", "tail")
	if !slices.Contains(names, given) {
		slices.Sort(names)
		return 0, usageErrorf("unknown record format %q: use %s", given, text.OrList(names))
	}
	f, err := render.ParseRecordFormat(given)
	if err != nil {
		return 0, usageError(err)
	}
	return f, nil
}

// recordFormatUsage is the help of tail's --format.
func recordFormatUsage() string {
	names := enumNames("format", "tail")
	slices.Sort(names)
	return "record format: " + text.OrList(names) + " (default: text on a terminal, else json)"
}

// enumUsage is the help of an enum flag: each value and what it means,
// "a (…) or b (…)" (scale --method, put --format).
func enumUsage(flag, command string) string {
	var parts []string
	for _, v := range enumFlagValues[flag][command] {
		parts = append(parts, v.Name+" ("+v.Description+")")
	}
	return text.OrList(parts)
}
