// Package completions provides cobra completion functions: stream names,
// shard ids of the named stream and the values of enum flags. Lookups run
// under a short deadline and fail silent: a slow or failing lookup returns no
// candidates and never writes into the user's shell.
//
// Imports: lineage, cobra, the SDK and the standard library.
package completions
