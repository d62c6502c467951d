package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

// Every command has one shape, as in gh and kubectl: an Options struct
// with three methods. complete fills it from the arguments, the flags and
// the environment (defaults, the terminal, the clock); validate checks and
// resolves every input without any network call, and returns a usage error
// (exit 2) for a wrong one; run builds the clients and does the work. The
// cobra constructor takes a runF that replaces run, so tests check argv →
// Options → validation without any client:
//
//	c := newTreeCmd(f, func(o *TreeOptions) error { got = o; return nil })
type command interface {
	complete(f *Factory, c *cobra.Command, args []string) error
	validate() error
	run(ctx context.Context, f *Factory) error
}

// runE is the RunE of every command: complete, validate, then runF when a
// test gave one, else run.
func runE[O command](f *Factory, opts O, runF func(O) error) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if err := opts.complete(f, c, args); err != nil {
			return err
		}
		if err := opts.validate(); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return opts.run(c.Context(), f)
	}
}

// base is what the options of every command share: the stream it works
// on, and what its validation needs from the command line.
type base struct {
	// Stream is the STREAM argument as given ("" for none); Ref is Stream
	// parsed by validation.
	Stream string
	Ref    kstream.Ref
	region string          // --region
	given  map[string]bool // the flags given on the command line
}

func (b *base) completeBase(f *Factory, c *cobra.Command, stream string) {
	b.Stream, b.region = stream, f.Global.Region
	b.given = map[string]bool{}
	c.Flags().Visit(func(fl *pflag.Flag) { b.given[fl.Name] = true })
}

// validateBase resolves the stream; commands call it last, after their own
// checks.
func (b *base) validateBase() error {
	ref, err := resolveStream(b.Stream, b.region)
	b.Ref = ref
	return err
}

// resolveStream reads a STREAM argument ("" for none) and checks --region
// against it: a malformed name, ARN or region is a usage error, and so is a
// --region that disagrees with an ARN's region (which the call uses).
func resolveStream(stream, region string) (kstream.Ref, error) {
	var ref kstream.Ref
	if stream != "" {
		var err error
		if ref, err = kstream.ParseRef(stream); err != nil {
			return ref, usageError(err)
		}
		if ref.Region != "" && region != "" && region != ref.Region {
			return ref, usageErrorf("--region %s disagrees with the stream ARN's region %s", region, ref.Region)
		}
	}
	if region != "" && !regionRE.MatchString(region) {
		return ref, usageErrorf("--region %q is not an AWS region name such as us-east-1", region)
	}
	return ref, nil
}
