// Package text holds the small wording helpers that several packages
// print with: counts with a plural, lists of names, byte sizes, one-line
// messages and the dash of an empty table cell. One place, so the same
// thing reads the same everywhere.
//
// Imports: the standard library only.
package text
