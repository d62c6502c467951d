package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/render"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

var _ kstream.CreateAPI = (*kinesis.Client)(nil)

// CreateOptions are the inputs of `create`.
type CreateOptions struct {
	base
	Shards   int
	OnDemand bool
	Wait     time.Duration
	Output   string
	// PollMin/PollMax tune the ACTIVE polling (tests shorten them).
	PollMin, PollMax time.Duration
}

func newCreateCmd(f *Factory, runF func(*CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{}
	c := &cobra.Command{
		Use:   "create STREAM --shards N | --on-demand",
		Short: "Create a stream unless it exists, and wait until it is ACTIVE",
		Long: `Create a stream in provisioned mode with --shards N (or in on-demand mode with
--on-demand) unless it already exists, then wait up to --wait until it is
ACTIVE. A stream that exists and is ACTIVE is a success ("already exists",
on stderr); one that is CREATING or UPDATING is waited for; one that is
DELETING is an error.`,
		Example: `  kinesis-shards create orders --shards 4
  kinesis-shards create clicks --on-demand --wait 2m
  kinesis-shards create orders --shards 4 -o json | jq -r .streamArn`,
		Args: exactArgs(1, "STREAM"),
		RunE: runE(f, opts, runF),
	}
	c.Flags().IntVar(&opts.Shards, "shards", 0, "number of shards of a provisioned stream (≥ 1)")
	c.Flags().BoolVar(&opts.OnDemand, "on-demand", false, "create an on-demand stream")
	c.Flags().DurationVar(&opts.Wait, "wait", time.Minute, "how long to wait for ACTIVE (0: do not wait)")
	return c
}

func (o *CreateOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeBase(f, c, args[0])
	o.Output = f.Global.Output
	return nil
}

func (o *CreateOptions) validate() (err error) {
	switch {
	case o.OnDemand && o.given["shards"]:
		return usageErrorf("--shards and --on-demand do not go together: an on-demand stream sizes itself")
	case !o.OnDemand && !o.given["shards"]:
		return usageErrorf("say how many shards with --shards N (N ≥ 1), or pass --on-demand")
	case !o.OnDemand && o.Shards < 1:
		return usageErrorf("--shards must be at least 1, not %d", o.Shards)
	case o.Shards > 10000:
		return usageErrorf("--shards %d is more than a stream can have (10000)", o.Shards)
	case o.Wait < 0:
		return usageErrorf("--wait must not be negative")
	}
	if o.Output, err = outputFormat("create", o.Output); err != nil {
		return err
	}
	return o.validateBase()
}

func (o *CreateOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisFor(ctx, o.Ref)
	if err != nil {
		return err
	}
	return runCreate(ctx, f, client, o.Ref, o)
}

func runCreate(ctx context.Context, f *Factory, api kstream.CreateAPI, ref kstream.Ref, opts *CreateOptions) error {
	res, sum, err := ensureStream(ctx, f, api, ref, kstream.Spec{Shards: opts.Shards, OnDemand: opts.OnDemand}, opts.Wait, opts.PollMin, opts.PollMax)
	if err != nil {
		return err
	}
	if res.Outcome == kstream.Existed && sum != nil {
		onDemand := sum.Mode == types.StreamModeOnDemand
		switch {
		case opts.OnDemand && !onDemand:
			fmt.Fprintf(f.IO.ErrOut, "note: stream %s is PROVISIONED with %d open shards; --on-demand was not applied (the stream's mode is left as it is)\n", ref, sum.OpenShards)
		case !opts.OnDemand && onDemand:
			fmt.Fprintf(f.IO.ErrOut, "note: stream %s is ON_DEMAND; --shards %d was not applied (the stream's mode is left as it is)\n", ref, opts.Shards)
		case !opts.OnDemand && sum.OpenShards != opts.Shards:
			fmt.Fprintf(f.IO.ErrOut, "note: stream %s has %d open shards; --shards %d was not applied (use scale to change it)\n", ref, sum.OpenShards, opts.Shards)
		}
	}
	if sum == nil {
		// --wait 0: report what we know.
		sum = &kstream.Summary{Name: ref.Name, ARN: ref.ARN, Status: res.StatusSeen, OpenShards: opts.Shards}
		if opts.OnDemand {
			sum.Mode = types.StreamModeOnDemand
		}
	}
	info := streamInfoFrom(sum, nil)
	created := res.Outcome == kstream.Created
	if opts.Output == "json" {
		return render.JSON(f.IO.Out, struct {
			streamInfo
			Created bool `json:"created"`
		}{info, created})
	}
	return render.Table(f.IO.Out, streamHeader, [][]string{info.row()})
}

// ensureStream creates the stream unless it exists and waits for ACTIVE,
// showing progress on stderr. wait == 0 returns right after creating. It is
// shared by create and tail --create-if-missing.
func ensureStream(ctx context.Context, f *Factory, api kstream.CreateAPI, ref kstream.Ref, spec kstream.Spec, wait, pollMin, pollMax time.Duration) (*kstream.EnsureResult, *kstream.Summary, error) {
	var p *progress
	wo := kstream.WaitOptions{Timeout: wait, MinDelay: pollMin, MaxDelay: pollMax}
	if wait == 0 {
		wo.Timeout = -1
	}
	wo.OnPoll = func(status types.StreamStatus, _ time.Duration) {
		msg := fmt.Sprintf("waiting for stream %s to become ACTIVE (%s)", ref, status)
		if p == nil {
			p = f.startProgress(msg)
		} else {
			p.Update(msg)
		}
	}
	res, err := kstream.Ensure(ctx, api, ref, spec, wo)
	lost := false
	if err != nil && lostCreate(err) {
		// CreateStream got no answer: it may have taken effect. Look.
		res, lost, err = recheckCreate(ctx, api, ref, wo, err)
	}
	if p != nil {
		final := ""
		if err == nil && res.Summary != nil {
			final = fmt.Sprintf("stream %s is ACTIVE after %s", ref, formatDuration(p.Elapsed()))
		}
		p.Stop(final)
	}
	if err != nil {
		return res, nil, err
	}
	switch {
	case lost:
		fmt.Fprintf(f.IO.ErrOut, "created stream %s (the answer to CreateStream was lost; the stream is there now)\n", ref)
	case res.Outcome == kstream.Created && res.Summary == nil:
		fmt.Fprintf(f.IO.ErrOut, "creating stream %s (not waiting)\n", ref)
	case res.Outcome == kstream.Created:
		fmt.Fprintf(f.IO.ErrOut, "created stream %s\n", ref)
	case res.StatusSeen == types.StreamStatusActive:
		fmt.Fprintf(f.IO.ErrOut, "stream %s already exists and is ACTIVE\n", ref)
	default:
		fmt.Fprintf(f.IO.ErrOut, "stream %s already existed (%s)\n", ref, res.StatusSeen)
	}
	return res, res.Summary, nil
}

// lostCreate reports whether err is a CreateStream call that got no answer
// (a dropped connection, a timeout, a 5xx), which may have created the
// stream.
func lostCreate(err error) bool {
	var oe *smithy.OperationError
	return errors.As(err, &oe) && oe.Operation() == "CreateStream" && awserr.MayHaveTakenEffect(err)
}

// recheckCreate looks for the stream after a CreateStream without an
// answer: there, it is waited for like one this call created; not there,
// the error stands; unknown, the error says the stream may exist.
func recheckCreate(ctx context.Context, api kstream.CreateAPI, ref kstream.Ref, wo kstream.WaitOptions, cause error) (*kstream.EnsureResult, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	s, err := kstream.Describe(cctx, api, ref)
	cancel()
	switch {
	case awserr.Of(err) == awserr.NotFound:
		return nil, false, cause
	case err != nil:
		return nil, false, &outcomeUnknownError{err: cause, note: fmt.Sprintf("stream %s may have been created: run the command again to find out", ref)}
	}
	res := &kstream.EnsureResult{Outcome: kstream.Created, StatusSeen: s.Status}
	if s.Status == types.StreamStatusActive {
		res.Summary = s
		return res, true, nil
	}
	if wo.Timeout < 0 {
		return res, true, nil
	}
	if s, err = kstream.WaitActive(ctx, api, ref, wo); err != nil {
		return nil, false, err
	}
	res.Summary = s
	return res, true, nil
}

// exactArgs is cobra.ExactArgs with a message that names the arguments.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %s (got %d argument(s)); see --help", c.CommandPath(), names, len(args))
		}
		return nil
	}
}
