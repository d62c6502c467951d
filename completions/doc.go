// Package completions provides cobra completion functions: stream names,
// shard ids and enhanced fan-out consumer names of the named stream, and
// the values of enum flags. Lookups run under a short deadline and fail
// silent: a slow or failing lookup returns no candidates and never writes
// into the user's shell.
//
// The package never builds a client itself: cmd hands it a ClientFunc (a
// ConsumerClientFunc for consumer names), which builds one from the global
// flags the user has already typed (cobra parses them before it calls a
// completion function). Which command gets which
// completion is cmd's decision; ParseUse reads the positional arguments a
// command documents in its Use line.
//
// Imports: lineage, internal/kstream (the ListStreams iterator),
// internal/awscall (the read-only call rule), cobra, the SDK and the
// standard library.
package completions
