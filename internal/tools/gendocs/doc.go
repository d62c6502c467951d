// Command gendocs writes the man pages (docs/man/*.1) and the Markdown
// command reference (docs/reference/*.md) from the command tree, so they
// say exactly what --help says. `make docs` runs it; TestDocsUpToDate fails
// when the committed pages are stale.
//
// The output is reproducible: a fixed man page date, no "Auto generated
// on <date>" lines, and a tree built with non-terminal streams, so that no
// default depends on the machine that runs it.
package main
