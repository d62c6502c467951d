package lineage

import (
	"errors"
	"strconv"
)

// Sentinel errors. Every error this package returns wraps exactly one of them
// (test with errors.Is) and reads as one complete sentence, so cmd can branch
// on the kind and print the text as it is.
var (
	ErrBadHashKey    = errors.New("invalid hash key")
	ErrBadPercent    = errors.New("invalid percentage")
	ErrBadShardID    = errors.New("invalid shard id")
	ErrBadShardCount = errors.New("invalid shard count")

	ErrMissingShardID   = errors.New("shard without an id")
	ErrDuplicateShardID = errors.New("duplicate shard id")
	ErrBadHashRange     = errors.New("invalid hash key range")
	ErrSelfParent       = errors.New("shard is its own parent")
	ErrDuplicateParent  = errors.New("shard names the same parent twice")
	ErrCycle            = errors.New("shard lineage has a cycle")

	ErrNoStream = errors.New("no stream given")
)

// kindError carries a full sentence for humans and a sentinel for code. Its
// text is the sentence alone: wrapping with fmt.Errorf("%s: %w") would print
// the sentinel's terse text too.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func newKindError(kind error, msg string) error { return &kindError{kind: kind, msg: msg} }

// quote quotes user input for an error message, shortening it so that a
// fuzzed or pasted megabyte does not end up in a terminal.
func quote(s string) string {
	const limit = 60
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:limit]) + "..."
}
