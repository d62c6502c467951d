// Package golden compares test output with golden files under a
// package's testdata/ directory, and rewrites them instead when the tests
// run with -update (go test ./render -update). It is the one golden-file
// helper, with the one -update flag, of every package.
//
// Imports: go-udiff and the standard library (and, for the shared flag,
// charmbracelet's golden package).
package golden
