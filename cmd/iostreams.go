package cmd

import (
	"bytes"
	"io"
	"os"

	"github.com/charmbracelet/x/term"
)

// IOStreams decides once whether the standard streams are terminals, whether
// colour is on and whether prompting is allowed; nothing else looks at
// os.Stdout.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	StdinTTY  bool
	StdoutTTY bool
	StderrTTY bool

	// ColorDisabled is set by --no-color or NO_COLOR.
	ColorDisabled bool
	// Width is the terminal width of stdout (0 when not a terminal).
	Width int
}

// SystemIO returns the process's streams.
func SystemIO() *IOStreams {
	ios := &IOStreams{
		In:        os.Stdin,
		Out:       stdoutWriter{os.Stdout},
		ErrOut:    os.Stderr,
		StdinTTY:  term.IsTerminal(os.Stdin.Fd()),
		StdoutTTY: term.IsTerminal(os.Stdout.Fd()),
		StderrTTY: term.IsTerminal(os.Stderr.Fd()),
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok && os.Getenv("NO_COLOR") != "" {
		ios.ColorDisabled = true
	}
	if ios.StdoutTTY {
		if w, _, err := term.GetSize(os.Stdout.Fd()); err == nil {
			ios.Width = w
		}
	}
	return ios
}

// TestIO returns streams backed by buffers, none of them a terminal.
func TestIO() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// ColorOut says whether stdout may carry colour.
func (s *IOStreams) ColorOut() bool { return s.StdoutTTY && !s.ColorDisabled }

// ColorErr says whether stderr may carry colour.
func (s *IOStreams) ColorErr() bool { return s.StderrTTY && !s.ColorDisabled }

// CanPrompt says whether the user can answer a question.
func (s *IOStreams) CanPrompt() bool { return s.StdinTTY && s.StderrTTY }

// stdoutWriter marks its write errors as stdout's, so that a closed stdout
// (`| head`) is told apart from an EPIPE on a connection to AWS. It is a
// terminal's file to those who look (Fd, Read, Close: the dashboard's
// bubbletea sizes and draws on it only then).
type stdoutWriter struct{ f *os.File }

func (s stdoutWriter) Write(p []byte) (int, error) {
	n, err := s.f.Write(p)
	if err != nil {
		err = &stdoutError{err}
	}
	return n, err
}

func (s stdoutWriter) Read(p []byte) (int, error) { return s.f.Read(p) }
func (s stdoutWriter) Close() error               { return s.f.Close() }
func (s stdoutWriter) Fd() uintptr                { return s.f.Fd() }

// stdoutError is a failed write to stdout.
type stdoutError struct{ err error }

func (e *stdoutError) Error() string { return "writing to stdout: " + e.err.Error() }
func (e *stdoutError) Unwrap() error { return e.err }
