package text

import (
	"strconv"
	"strings"
)

// Plural is "1 shard", "0 shards", "3 shards".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// List names items for a sentence: "none", "a", "a and b", "a, b and c".
// With max > 0, only the first max are named: "a, b and 3 more".
func List(items []string, max int) string {
	switch {
	case len(items) == 0:
		return "none"
	case max > 0 && len(items) > max:
		return strings.Join(items[:max], ", ") + " and " + strconv.Itoa(len(items)-max) + " more"
	case len(items) == 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// OrList names the choices of a sentence: "a", "a or b", "a, b or c".
func OrList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// Bytes prints a size (or, with "/s" after it, a rate) in binary units:
// "0 B", "512 B", "1.5 KiB", "2.0 MiB", "1.25 GiB". Less than one byte is
// "0 B".
func Bytes(n float64) string {
	switch {
	case n < 1:
		return "0 B"
	case n < 1<<10:
		return strconv.FormatFloat(n, 'f', 0, 64) + " B"
	case n < 1<<20:
		return strconv.FormatFloat(n/(1<<10), 'f', 1, 64) + " KiB"
	case n < 1<<30:
		return strconv.FormatFloat(n/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(n/(1<<30), 'f', 2, 64) + " GiB"
}

// OneLine folds every run of white space, line breaks included, into one
// space: a message that must stay on one line.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// OrDash is s, or "-" for an empty table cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
