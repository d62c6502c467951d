package reshard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// API is what the executor needs from the client; *kinesis.Client
// satisfies it.
type API interface {
	lineage.ShardLister
	kstream.DescribeAPI
	SplitShard(ctx context.Context, in *kinesis.SplitShardInput, optFns ...func(*kinesis.Options)) (*kinesis.SplitShardOutput, error)
	MergeShards(ctx context.Context, in *kinesis.MergeShardsInput, optFns ...func(*kinesis.Options)) (*kinesis.MergeShardsOutput, error)
	UpdateShardCount(ctx context.Context, in *kinesis.UpdateShardCountInput, optFns ...func(*kinesis.Options)) (*kinesis.UpdateShardCountOutput, error)
}

// EventKind says what the executor is doing.
type EventKind int

// Events, in the order they come for each step.
const (
	// EventSend: the step's call is about to be sent (Step.Args hold ids).
	EventSend EventKind = iota + 1
	// EventWait: a status poll while waiting for ACTIVE after the call.
	EventWait
	// EventDone: the step is done and the new layout listed.
	EventDone
	// EventCheck: the step's call failed without an answer that says it
	// was refused for sure (Err); the executor waits for ACTIVE and lists
	// the shards to see whether it took effect all the same.
	EventCheck
)

// Event is one progress report.
type Event struct {
	Kind    EventKind
	Step    int // 1-based
	Total   int
	Desc    string             // the step, with ids resolved
	Status  types.StreamStatus // EventWait
	Elapsed time.Duration      // since the call was sent
	Done    *DoneStep          // EventDone
	Err     error              // EventCheck: the call's error
}

// Executor runs a plan against the stream, one call at a time.
type Executor struct {
	API    API
	Stream kstream.Ref
	// Wait bounds the wait for ACTIVE after each call (Timeout; 0: ten
	// minutes) and sets the polling of DescribeStreamSummary (MinDelay,
	// MaxDelay; 0: 100 ms doubling to 2 s).
	Wait kstream.WaitOptions
	// OnEvent receives progress; it may be nil.
	OnEvent func(Event)
	// Settle is how often, and how long apart, the layout is listed again
	// when a listing right after ACTIVE does not show the step yet; 0: 5
	// times, 500 ms apart.
	SettleTries int
	SettleDelay time.Duration
	// LostWait bounds the look for a lost answer (the wait for ACTIVE and
	// the listing); 0: Wait.Timeout, at most a minute.
	LostWait time.Duration
}

// DoneStep is one completed step, with the ids the service used.
type DoneStep struct {
	Step int  `json:"step"`
	Call Call `json:"call"`
	// Args with every shard id resolved from the listing taken just before
	// the call.
	Args Args `json:"args"`
	// Closed and Opened are the ids of the shards the step closed and opened.
	Closed  []string `json:"closed"`
	Opened  []string `json:"opened"`
	Seconds float64  `json:"seconds"`
}

// Result is what a run did.
type Result struct {
	Done []DoneStep `json:"stepsDone"`
	// Layout is the open layout listed at the end (after a failure: as it is
	// now, when it could be listed).
	Layout []Slot `json:"layout"`
	// Graph is the last listing; nil if none could be taken.
	Graph *lineage.Graph `json:"-"`
	// Lost is the step whose call failed without an answer although the
	// listing shows it took effect (it is in Done): the call reached the
	// service and only its answer was lost. When it was the last step,
	// Run returns no error; else the StepError is that step's.
	Lost *StepError `json:"-"`
}

// StepError says which step failed and how; Result holds the steps done
// and the layout as it is now.
type StepError struct {
	Step, Total int
	Desc        string // the step
	// Sent: the call was accepted by the service; the failure came while
	// waiting for ACTIVE or checking the new layout.
	Sent bool
	Err  error
	// ListErr is set when the layout could not be listed after the failure.
	ListErr error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("%s: %v", e.Context(), e.Err)
}

// Context is the sentence without the cause: which step, and whether it
// was sent.
func (e *StepError) Context() string {
	s := fmt.Sprintf("step %d of %d (%s)", e.Step, e.Total, e.Desc)
	if e.Sent {
		return s + " was sent, then failed"
	}
	return s + " failed"
}

func (e *StepError) Unwrap() error { return e.Err }

// Run checks that the stream is ACTIVE and still has the plan's layout,
// then runs the steps one at a time: it resolves each step's shards from
// the latest listing, sends the call, waits for ACTIVE, lists the shards and
// checks the layout is the planned one (for UpdateShardCount: the shard
// count and a gap-free cover, since the service picks the ranges). It stops
// at the first failure and never retries a failed call: LimitExceeded (a
// daily quota) and ResourceInUse (someone else's change) reach the caller at
// once. On failure the error is a *StepError (or, before anything was sent,
// a refusal wrapping ErrNotActive, ErrOnDemand or ErrLayoutChanged), and the
// Result says what was done and what the layout is now.
//
// A call that failed may have taken effect all the same: the answer was
// lost (a dropped connection, a timeout) and the SDK's retry of it was then
// refused (the stream is UPDATING, the shard is closed) or failed too. The
// executor cannot tell from the error; the listing can. So after such a
// failure it waits for ACTIVE, lists, and when the step shows done it
// records it (Result.Lost): the last step's lost answer is a success.
func (x *Executor) Run(ctx context.Context, p *Plan) (*Result, error) {
	res := &Result{Done: []DoneStep{}}
	if x.Wait.Timeout == 0 {
		x.Wait.Timeout = 10 * time.Minute
	}
	if x.SettleTries <= 0 {
		x.SettleTries = 5
	}
	if x.SettleDelay <= 0 {
		x.SettleDelay = 500 * time.Millisecond
	}
	sum, err := kstream.Describe(ctx, x.API, x.Stream)
	if err != nil {
		return res, err
	}
	g, err := x.list(ctx)
	if err != nil {
		return res, err
	}
	res.Graph, res.Layout = g, layoutOf(g)
	if _, err := checkInput(Input{Stream: Stream{Name: x.Stream.Name, Status: sum.Status, Mode: sum.Mode}, Graph: g}); err != nil {
		return res, err
	}
	if !sameLayout(res.Layout, p.Before, true) {
		return res, refuse(ErrLayoutChanged, fmt.Sprintf("the open shards of stream %s changed after the plan was made (someone else resharded it?); nothing was sent: run the command again for a new plan", x.Stream.Name))
	}
	total := len(p.Steps)
	want := slices.Clone(p.Before)
	for i, st := range p.Steps {
		n := i + 1
		args, err := resolve(st, res.Layout)
		if err != nil {
			return res, &StepError{Step: n, Total: total, Desc: st.String(), Err: err}
		}
		resolved := st
		resolved.Args = args
		desc := resolved.String()
		x.emit(Event{Kind: EventSend, Step: n, Total: total, Desc: desc})
		start := time.Now()
		if err := x.send(ctx, args, st.Call); err != nil {
			se := &StepError{Step: n, Total: total, Desc: desc, Err: err}
			res, err := x.fail(ctx, res, se)
			if ctx.Err() == nil && x.lostAnswer(ctx, p, res, se) && n == total {
				return res, nil
			}
			return res, err
		}
		w := x.Wait
		w.OnPoll = func(status types.StreamStatus, _ time.Duration) {
			x.emit(Event{Kind: EventWait, Step: n, Total: total, Desc: desc, Status: status, Elapsed: time.Since(start)})
		}
		if _, err := kstream.WaitActive(ctx, x.API, x.Stream, w); err != nil {
			return x.fail(ctx, res, &StepError{Step: n, Total: total, Desc: desc, Sent: true, Err: err})
		}
		if want, err = Apply(want, st); err != nil {
			return res, fmt.Errorf("reshard: step %d of the plan: %w", n, err)
		}
		g, err := x.settle(ctx, st, want)
		if err != nil {
			return x.fail(ctx, res, &StepError{Step: n, Total: total, Desc: desc, Sent: true, Err: err})
		}
		prev := res.Layout
		res.Graph, res.Layout = g, layoutOf(g)
		d := DoneStep{Step: n, Call: st.Call, Args: args, Seconds: time.Since(start).Seconds()}
		d.Closed, d.Opened = diffIDs(prev, res.Layout)
		res.Done = append(res.Done, d)
		x.emit(Event{Kind: EventDone, Step: n, Total: total, Desc: desc, Elapsed: time.Since(start), Done: &d})
	}
	return res, nil
}

func (x *Executor) emit(e Event) {
	if x.OnEvent != nil {
		x.OnEvent(e)
	}
}

func (x *Executor) list(ctx context.Context) (*lineage.Graph, error) {
	return lineage.Load(ctx, x.API, lineage.ListOptions{StreamName: x.Stream.Name, StreamARN: x.Stream.ARN})
}

// fail lists the layout as it is now (with a context of its own, in case
// ctx is what failed) and returns the step error.
func (x *Executor) fail(ctx context.Context, res *Result, e *StepError) (*Result, error) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	g, err := x.list(lctx)
	if err != nil {
		e.ListErr = err
		res.Graph, res.Layout = nil, nil
		return res, e
	}
	res.Graph, res.Layout = g, layoutOf(g)
	return res, e
}

// lostAnswer looks whether the step se, whose call failed, took effect
// all the same: it waits for ACTIVE (within LostWait), lists the shards and
// asks tookEffect, which records the step in res when it did.
func (x *Executor) lostAnswer(ctx context.Context, p *Plan, res *Result, se *StepError) bool {
	x.emit(Event{Kind: EventCheck, Step: se.Step, Total: se.Total, Desc: se.Desc, Err: se.Err})
	w := x.Wait
	w.OnPoll = nil
	if x.LostWait > 0 {
		w.Timeout = x.LostWait
	} else {
		w.Timeout = min(w.Timeout, time.Minute)
	}
	lctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	if _, err := kstream.WaitActive(lctx, x.API, x.Stream, w); err != nil {
		return false
	}
	g, err := x.list(lctx)
	if err != nil || !tookEffect(p, res, se, g) {
		return false
	}
	res.Lost = se
	return true
}

// settle lists the shards until the layout is the planned one, a few times:
// a listing right after ACTIVE may lag behind on some backends.
func (x *Executor) settle(ctx context.Context, st Step, want []Slot) (*lineage.Graph, error) {
	var last error
	for try := 0; try < x.SettleTries; try++ {
		if try > 0 {
			if err := awscall.Sleep(ctx, x.SettleDelay); err != nil {
				return nil, err
			}
		}
		g, err := x.list(ctx)
		if err != nil {
			return nil, err
		}
		got := layoutOf(g)
		if err := lineage.CheckCoverage(ranges(got)); err != nil {
			last = refuse(ErrLayoutChanged, fmt.Sprintf("after the call the open shards of stream %s do not cover the key space exactly once: %v", x.Stream.Name, err))
			continue
		}
		if st.Call == UpdateShardCount {
			if len(got) != st.Args.TargetShardCount {
				last = refuse(ErrLayoutChanged, fmt.Sprintf("after UpdateShardCount stream %s has %d open shards, not %d", x.Stream.Name, len(got), st.Args.TargetShardCount))
				continue
			}
			return g, nil
		}
		if !sameLayout(got, want, false) {
			last = refuse(ErrLayoutChanged, fmt.Sprintf("after the call the open shards of stream %s are not the planned ones (%d open, %d planned): someone else may be resharding it", x.Stream.Name, len(got), len(want)))
			continue
		}
		return g, nil
	}
	return nil, last
}

// send makes the step's call. LimitExceeded is never retried, whatever the
// client's retryer (the SDK's default one retries it): a daily quota or an
// account limit reaches the user at once. The SDK never retries
// ResourceInUse or InvalidArgument either.
func (x *Executor) send(ctx context.Context, a Args, call Call) error {
	name, arn := x.Stream.NameInput(), x.Stream.ARNInput()
	var err error
	switch call {
	case SplitShard:
		_, err = x.API.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: name, StreamARN: arn,
			ShardToSplit: aws.String(a.ShardToSplit.ID), NewStartingHashKey: aws.String(a.NewStartingHashKey.String())}, awscall.NoQuotaRetries)
	case MergeShards:
		_, err = x.API.MergeShards(ctx, &kinesis.MergeShardsInput{StreamName: name, StreamARN: arn,
			ShardToMerge: aws.String(a.ShardToMerge.ID), AdjacentShardToMerge: aws.String(a.AdjacentShardToMerge.ID)}, awscall.NoQuotaRetries)
	case UpdateShardCount:
		_, err = x.API.UpdateShardCount(ctx, &kinesis.UpdateShardCountInput{StreamName: name, StreamARN: arn,
			TargetShardCount: aws.Int32(int32(a.TargetShardCount)), ScalingType: types.ScalingTypeUniformScaling}, awscall.NoQuotaRetries)
	default:
		err = fmt.Errorf("unknown call %q", call)
	}
	return err
}

// resolve fills in the ids of the step's shards from the open layout,
// matching by range: a shard made by an earlier step has no id in the plan.
func resolve(st Step, open []Slot) (Args, error) {
	a := st.Args
	find := func(s *Slot) (*Slot, error) {
		if s == nil {
			return nil, nil
		}
		i := slices.IndexFunc(open, func(o Slot) bool { return o.Range == s.Range })
		if i < 0 {
			return nil, refuse(ErrLayoutChanged, fmt.Sprintf("no open shard holds exactly %s any more, so %s cannot be sent: the stream changed under the plan", s.Range, st.Call))
		}
		if s.ID != "" && open[i].ID != s.ID {
			return nil, refuse(ErrLayoutChanged, fmt.Sprintf("range %s is now held by shard %s, not %s: the stream changed under the plan", s.Range, open[i].ID, s.ID))
		}
		r := open[i]
		r.Traffic = s.Traffic
		return &r, nil
	}
	var err error
	if a.ShardToSplit, err = find(a.ShardToSplit); err != nil {
		return a, err
	}
	if a.ShardToMerge, err = find(a.ShardToMerge); err != nil {
		return a, err
	}
	if a.AdjacentShardToMerge, err = find(a.AdjacentShardToMerge); err != nil {
		return a, err
	}
	return a, nil
}

// LayoutOf returns the open shards of g as slots, sorted by range.
func LayoutOf(g *lineage.Graph) []Slot { return layoutOf(g) }

func layoutOf(g *lineage.Graph) []Slot {
	open := g.Open()
	out := make([]Slot, len(open))
	for i, s := range open {
		out[i] = Slot{ID: s.ID, Range: s.Range}
	}
	return out
}

func ranges(l []Slot) []lineage.HashRange {
	out := make([]lineage.HashRange, len(l))
	for i, s := range l {
		out[i] = s.Range
	}
	return out
}

// sameLayout compares two sorted layouts by range, and by id where both
// have one when ids is set.
func sameLayout(a, b []Slot, ids bool) bool {
	return slices.EqualFunc(a, b, func(x, y Slot) bool {
		return x.Range == y.Range && (!ids || x.ID == "" || y.ID == "" || x.ID == y.ID)
	})
}

// diffIDs returns the ids in prev but not in next, and in next but not in prev.
func diffIDs(prev, next []Slot) (closed, opened []string) {
	ids := func(l []Slot) map[string]bool {
		m := make(map[string]bool, len(l))
		for _, s := range l {
			m[s.ID] = true
		}
		return m
	}
	p, n := ids(prev), ids(next)
	closed, opened = []string{}, []string{}
	for _, s := range prev {
		if !n[s.ID] {
			closed = append(closed, s.ID)
		}
	}
	for _, s := range next {
		if !p[s.ID] {
			opened = append(opened, s.ID)
		}
	}
	return closed, opened
}

// IsRefusal reports whether err is one of the planner's refusals (nothing
// was sent because of it).
func IsRefusal(err error) bool {
	var k *kindError
	return errors.As(err, &k)
}
