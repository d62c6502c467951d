// Package jq evaluates the jq expressions of `tail --filter` and `tail
// --jq` on records, in-process, with gojq.
//
// An expression is compiled once (Compile), before any call to the
// service: a mistake is an *ExprError naming its line and column. Each
// record's input is its --format json line as an object (RecordInput;
// LogEventInput for --cwlogs), plus .payload: the payload parsed as JSON
// when it is JSON, numbers kept exact.
//
//   - Filter: a record is kept when the expression's first output is true
//     in jq's sense (anything but false and null). No output drops the
//     record; outputs after the first are not computed.
//   - Transform: every output is printed, one JSON value per line, encoded
//     as jq encodes (gojq's encoder: object keys sorted); in raw mode a
//     string output is printed as it is, like jq -r.
//
// Select puts a Filter and a Transform together as tail's Options.Select:
// a record's input is made once, the filter decides, the transform's lines
// become the record's Out.
//
// An expression that fails on a record (a type error, error(...)) skips
// that record: nothing of it is printed, and each distinct error message
// is warned about once. Evaluation never stops the tail.
//
// Imports: render (the record objects), tail (record types), gojq and the
// standard library.
package jq
