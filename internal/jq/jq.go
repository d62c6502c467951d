package jq

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/itchyny/gojq"
)

// Program is a compiled expression. It holds no state of its own, so one
// Program may serve a Filter and a Transform.
type Program struct {
	flag string
	expr string
	code *gojq.Code
}

// ExprError says an expression does not parse or compile. Line and Column
// (1-based, in characters) locate a parse error; they are 0 for compile
// errors, which gojq gives no position for (an unknown function or
// variable).
type ExprError struct {
	Flag   string // the option it came from: "--filter"
	Expr   string
	Line   int
	Column int
	Err    error
}

func (e *ExprError) Error() string {
	where := ""
	switch {
	case e.Line > 1:
		where = fmt.Sprintf(" at line %d, column %d", e.Line, e.Column)
	case e.Column > 0:
		where = fmt.Sprintf(" at column %d", e.Column)
	}
	return fmt.Sprintf("%s: %s%s in the jq expression '%s'", e.Flag, describeParseErr(e.Err), where, oneLine(e.Expr, 200))
}

func (e *ExprError) Unwrap() error { return e.Err }

// describeParseErr words gojq's parse errors ("unexpected EOF" is the end
// of the expression, not of a file).
func describeParseErr(err error) string {
	if s := err.Error(); s != "unexpected EOF" {
		return s
	}
	return "unexpected end"
}

// Compile parses and compiles expr. flag names the option in errors. The
// expression gets no input stream (input and inputs are refused) and an
// empty environment ($ENV is {}): it sees the record and nothing else.
func Compile(flag, expr string) (*Program, error) {
	q, err := gojq.Parse(expr)
	if err != nil {
		e := &ExprError{Flag: flag, Expr: expr, Err: err}
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			e.Line, e.Column = position(expr, pe.Offset-len(pe.Token))
		}
		return nil, e
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, &ExprError{Flag: flag, Expr: expr, Err: err}
	}
	return &Program{flag: flag, expr: expr, code: code}, nil
}

// position turns a byte offset of expr into a 1-based line and column
// (columns count characters).
func position(expr string, offset int) (line, column int) {
	offset = min(max(offset, 0), len(expr))
	before := expr[:offset]
	line = strings.Count(before, "\n") + 1
	if i := strings.LastIndexByte(before, '\n'); i >= 0 {
		before = before[i+1:]
	}
	return line, utf8.RuneCountInString(before) + 1
}

// oneLine keeps text on one line (line breaks shown as \n) and at most n
// characters long.
func oneLine(s string, n int) string {
	s = strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
