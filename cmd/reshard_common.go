package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
	"github.com/kinesis-shards/kinesis-shards/lineage"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
)

// reshardAPI is what split, merge and scale need from the client.
type reshardAPI interface {
	reshard.API
	reshard.SampleAPI
}

var _ reshardAPI = (*kinesis.Client)(nil)

// ReshardOptions are the inputs split, merge and scale share.
type ReshardOptions struct {
	base
	Yes    bool
	DryRun bool
	Wide   bool
	// Wait bounds the wait for ACTIVE after each call.
	Wait time.Duration
	// Sample is how many recent records per shard to sample for traffic
	// shares (0: none); SampleWindow how far back.
	Sample       int
	SampleWindow time.Duration
	// SampleMin is the fewest records a shard whose sampling ran out of
	// time must have yielded (0: 1).
	SampleMin int
	Output    string
	// PlanFile is a dry run's -o json plan to run as it is (--plan).
	PlanFile string
	// PollMin/PollMax tune the ACTIVE polling (tests shorten them).
	PollMin, PollMax time.Duration

	command   string // split, merge or scale
	canPrompt bool
}

// reshardDoc is the -o json document of split, merge and scale: the plan,
// and after a run its result. Field names are documented in the README.
type reshardDoc struct {
	*reshard.Plan
	DryRun bool            `json:"dryRun"`
	Result *reshardOutcome `json:"result,omitempty"`
}

type reshardOutcome struct {
	Completed bool               `json:"completed"`
	StepsDone []reshard.DoneStep `json:"stepsDone"`
	// Layout is the open layout listed at the end (after a failure: as it
	// is now; null when it could not be listed).
	Layout []reshard.Slot `json:"layout"`
	Error  string         `json:"error,omitempty"`
}

// addReshardFlags adds the flags every reshard command has.
func addReshardFlags(c *cobra.Command, o *ReshardOptions, sampleHelp string) {
	fl := c.Flags()
	fl.BoolVarP(&o.Yes, "yes", "y", false, "do not ask for confirmation (required when stdin is not a terminal)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "show the preview and stop: nothing that changes the stream is called")
	fl.BoolVar(&o.Wide, "wide", false, "show hash keys in full in the preview")
	fl.DurationVar(&o.Wait, "wait", 10*time.Minute, "how long to wait for the stream to be ACTIVE after each call")
	fl.IntVar(&o.Sample, "sample", 0, sampleHelp)
	fl.DurationVar(&o.SampleWindow, "sample-window", reshard.DefaultSampleWindow, "how far back the traffic sample reads (--sample, --balanced)")
	fl.StringVar(&o.PlanFile, "plan", "", "run the plan a dry run wrote (--dry-run -o json) to this `FILE`, as it is, after checking the stream still has the shards it was made from")
}

// completeReshard fills what the reshard commands share.
func (o *ReshardOptions) completeReshard(f *Factory, c *cobra.Command, stream string) {
	o.completeBase(f, c, stream)
	o.command, o.Output, o.canPrompt = c.Name(), f.Global.Output, f.IO.CanPrompt()
}

// validateReshard checks the shared flags before anything is sent.
func (o *ReshardOptions) validateReshard() error {
	if o.Wait <= 0 {
		return usageErrorf("--wait must be positive")
	}
	if o.Sample < 0 || o.Sample > reshard.MaxSampleSize {
		return usageErrorf("--sample must be from 0 (no sample) to %d records per shard, not %d", reshard.MaxSampleSize, o.Sample)
	}
	if o.SampleWindow <= 0 {
		return usageErrorf("--sample-window must be positive")
	}
	if o.given["plan"] && o.PlanFile == "" {
		return usageErrorf("--plan needs the FILE a dry run wrote with -o json")
	}
	if o.PlanFile != "" && (o.given["sample"] || o.given["sample-window"]) {
		return usageErrorf("--plan runs the previewed plan as it is, without a new sample: it does not go with --sample or --sample-window")
	}
	out, err := outputFormat(o.command, o.Output)
	if err != nil {
		return err
	}
	o.Output = out
	if err := requireConfirmable(o.canPrompt, o.Yes, o.DryRun); err != nil {
		return err
	}
	return o.validateBase()
}

// runReshardGoal builds the client and runs the goal.
func (o *ReshardOptions) runReshardGoal(ctx context.Context, f *Factory, goal reshard.Goal) error {
	client, err := f.KinesisFor(ctx, o.Ref)
	if err != nil {
		return err
	}
	return runReshard(ctx, f, client, o.Ref, goal, o)
}

// runReshard lists the stream, checks the goal, samples traffic if asked,
// shows the preview (or the JSON plan), asks, runs the plan and prints the
// new layout.
func runReshard(ctx context.Context, f *Factory, api reshardAPI, ref kstream.Ref, goal reshard.Goal, opts *ReshardOptions) error {
	var (
		plan *reshard.Plan
		err  error
	)
	pl := planner(f, api, ref, opts)
	if opts.PlanFile != "" {
		plan, err = loadReshardPlan(ctx, pl, goal, opts.PlanFile)
	} else {
		plan, err = pl.Plan(ctx, goal)
	}
	if err != nil {
		return err
	}
	jsonOut := opts.Output == "json"
	doc := &reshardDoc{Plan: plan, DryRun: opts.DryRun}

	if len(plan.Steps) == 0 {
		fmt.Fprintln(f.IO.ErrOut, plan.Description)
		for _, n := range plan.Notes {
			fmt.Fprintln(f.IO.ErrOut, "note: "+n)
		}
		if jsonOut {
			return render.JSON(f.IO.Out, doc)
		}
		return nil
	}

	// The preview: on stdout, or on stderr when stdout carries the JSON
	// document and a person has to read it before answering.
	switch {
	case !jsonOut:
		if err := render.Preview(f.IO.Out, plan, render.PreviewOptions{Theme: render.NewTheme(f.IO.ColorOut()), Wide: opts.Wide}); err != nil {
			return err
		}
	case !opts.Yes && !opts.DryRun:
		if err := render.Preview(f.IO.ErrOut, plan, render.PreviewOptions{Theme: render.NewTheme(f.IO.ColorErr()), Wide: opts.Wide}); err != nil {
			return err
		}
	}
	if opts.DryRun {
		fmt.Fprintln(f.IO.ErrOut, "dry run: nothing was sent")
		if jsonOut {
			return render.JSON(f.IO.Out, doc)
		}
		return nil
	}
	if !opts.Yes {
		if err := f.confirm(fmt.Sprintf("Send %s to stream %s?", text.Plural(len(plan.Steps), "call"), ref)); err != nil {
			return err
		}
	}

	res, runErr := executeReshardPlan(ctx, f, api, ref, plan, opts)
	se := (*reshard.StepError)(nil)
	if runErr != nil && !errors.As(runErr, &se) {
		return runErr // refused or failed before anything was sent
	}
	var failure error
	switch {
	case runErr == nil && res.Lost != nil:
		// The last step took effect although its answer was lost.
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", lostNote(f, res.Lost))
	case runErr != nil:
		failure = describeStepFailure(ctx, f, runErr, res, len(plan.Steps))
	}
	outcome := &reshardOutcome{Completed: runErr == nil, StepsDone: res.Done, Layout: res.Layout}
	if failure != nil {
		outcome.Error = failure.Error()
	}
	if jsonOut {
		doc.Result = outcome
		if err := render.JSON(f.IO.Out, doc); err != nil {
			return err
		}
	} else if res.Layout != nil {
		title := fmt.Sprintf("\nStream %s now has %s:\n", ref, text.Plural(len(res.Layout), "open shard"))
		if runErr != nil {
			title = fmt.Sprintf("\nStream %s has %s now:\n", ref, text.Plural(len(res.Layout), "open shard"))
		}
		fmt.Fprint(f.IO.Out, title)
		if err := render.Layout(f.IO.Out, res.Layout, render.LayoutOptions{PreviewOptions: render.PreviewOptions{Theme: render.NewTheme(f.IO.ColorOut()), Wide: opts.Wide}, Before: plan.Before}); err != nil {
			return err
		}
	}
	return failure
}

// planner is the reshard workflow's planning half for this command line:
// its traffic sample (--sample, --balanced) comes with a progress line.
func planner(f *Factory, api reshardAPI, ref kstream.Ref, opts *ReshardOptions) *reshard.Planner {
	pl := &reshard.Planner{API: api, Stream: ref}
	if opts.Sample > 0 {
		pl.Sample = func(ctx context.Context, shards []*lineage.Shard) (*reshard.Sample, error) {
			return sampleReshardTraffic(ctx, f, api, ref, shards, opts)
		}
	}
	return pl
}

// loadReshardPlan reads a dry run's plan (--plan FILE) and checks that it
// does what the command line asks and still applies to the stream.
func loadReshardPlan(ctx context.Context, pl *reshard.Planner, goal reshard.Goal, path string) (*reshard.Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot read plan file %s: %w", path, err)
	}
	return pl.Load(ctx, goal, path, b)
}

// sampleReshardTraffic samples the given shards with a spinner on stderr.
func sampleReshardTraffic(ctx context.Context, f *Factory, api reshard.SampleAPI, ref kstream.Ref, shards []*lineage.Shard, opts *ReshardOptions) (*reshard.Sample, error) {
	what := shards[0].ID
	if len(shards) > 1 {
		what = text.Plural(len(shards), "shard")
	}
	msg := fmt.Sprintf("sampling up to %d records of %s from the last %s", opts.Sample, what, opts.SampleWindow)
	if len(shards) > 1 {
		msg = fmt.Sprintf("sampling up to %d records of each of %s from the last %s", opts.Sample, what, opts.SampleWindow)
	}
	p := f.startProgress(msg)
	s, err := reshard.SampleTraffic(ctx, api, ref, shards, reshard.SampleOptions{Max: opts.Sample, Window: opts.SampleWindow, MinRecords: opts.SampleMin})
	final := ""
	if err == nil {
		final = fmt.Sprintf("sampled %s of %s in %s", text.Plural(s.Records, "record"), what, formatDuration(p.Elapsed()))
	}
	p.Stop(final)
	for _, w := range s.Short() {
		fmt.Fprintln(f.IO.ErrOut, "warning: "+w)
	}
	return s, err
}

// executeReshardPlan runs the plan with a spinner on stderr and a line per step done.
func executeReshardPlan(ctx context.Context, f *Factory, api reshard.API, ref kstream.Ref, plan *reshard.Plan, opts *ReshardOptions) (*reshard.Result, error) {
	var p *progress
	start := time.Now()
	x := &reshard.Executor{
		API:    api,
		Stream: ref,
		Wait:   kstream.WaitOptions{Timeout: opts.Wait, MinDelay: opts.PollMin, MaxDelay: opts.PollMax},
		OnEvent: func(e reshard.Event) {
			step := fmt.Sprintf("step %d/%d", e.Step, e.Total)
			switch e.Kind {
			case reshard.EventSend:
				p = f.startProgress(fmt.Sprintf("%s: %s", step, e.Desc))
			case reshard.EventWait:
				if e.Status == types.StreamStatusActive {
					return // the done line follows
				}
				p.Update(fmt.Sprintf("%s: waiting for stream %s to be ACTIVE (%s)", step, ref, e.Status))
			case reshard.EventCheck:
				p.Update(fmt.Sprintf("%s: no answer came; waiting for stream %s to be ACTIVE to see whether it took effect", step, ref))
			case reshard.EventDone:
				p.Stop(fmt.Sprintf("%s done in %s: %s; closed %s, opened %s", step, formatDuration(e.Elapsed), e.Desc,
					strings.Join(e.Done.Closed, ", "), strings.Join(e.Done.Opened, ", ")))
				p = nil
			}
		},
	}
	res, err := x.Run(ctx, plan)
	if p != nil {
		p.Stop("")
	}
	if err == nil && res.Lost == nil {
		fmt.Fprintf(f.IO.ErrOut, "done: %s in %s\n", text.Plural(len(plan.Steps), "call"), formatDuration(time.Since(start)))
	}
	return res, err
}

// describeStepFailure says which step failed and why (in the words of
// describeError), what was done and where to look; it keeps "interrupted"
// for Ctrl-C.
func describeStepFailure(ctx context.Context, f *Factory, err error, res *reshard.Result, total int) error {
	var se *reshard.StepError
	if !errors.As(err, &se) {
		return err
	}
	if res.Lost != nil {
		return fmt.Errorf("%s; %s, the layout as it is now is shown", lostNote(f, res.Lost), doneCount(len(res.Done), total))
	}
	done := doneCount(len(res.Done), total)
	where := "the layout as it is now is shown"
	if se.ListErr != nil {
		where = "the shards could not be listed afterwards (" + text.OneLine(wordError(se.ListErr, f.errCtx)) + "); see `kinesis-shards tree " + f.errCtx.stream + "`"
	}
	msg := fmt.Sprintf("%s: %s; %s, %s", se.Context(), text.OneLine(wordError(se.Err, f.errCtx)), done, where)
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(f.IO.ErrOut, msg)
		return err // "interrupted", exit 130
	}
	return errors.New(msg)
}

func doneCount(done, total int) string {
	if done == 1 {
		return fmt.Sprintf("1 of %d steps was done", total)
	}
	return fmt.Sprintf("%d of %d steps were done", done, total)
}

// lostNote says that the step se took effect although its answer was lost
// (the executor saw it in the listing).
func lostNote(f *Factory, se *reshard.StepError) string {
	return fmt.Sprintf("step %d of %d (%s) took effect, although the tool got no answer to it (its last attempt: %s): the listing shows the new shards",
		se.Step, se.Total, se.Desc, text.OneLine(wordError(se.Err, f.errCtx)))
}
