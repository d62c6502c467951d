package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/render"
)

// consumersAPI is what `consumers` needs from the client.
type consumersAPI interface {
	kstream.DescribeAPI
	kstream.ConsumerAPI
}

var _ consumersAPI = (*kinesis.Client)(nil)

// ConsumersOptions are the inputs of `consumers`.
type ConsumersOptions struct {
	base
	Register   string
	Deregister string
	Yes        bool
	DryRun     bool
	Wait       time.Duration
	Output     string
	// PollMin/PollMax tune the status polling (tests shorten them).
	PollMin, PollMax time.Duration

	canPrompt bool
}

// efoBillingNote is said where a consumer starts to cost money.
const efoBillingNote = "note: enhanced fan-out is billed per consumer-shard hour and per GB read, for as long as the consumer is registered"

func newConsumersCmd(f *Factory, runF func(*ConsumersOptions) error) *cobra.Command {
	opts := &ConsumersOptions{}
	c := &cobra.Command{
		Use:   "consumers STREAM [--register NAME | --deregister NAME]",
		Short: "List, register or deregister a stream's enhanced fan-out consumers",
		Long: `List the enhanced fan-out consumers of a stream (name, status, creation time
and ARN), register one, or deregister one.

A registered consumer reads every shard at 2 MiB per second of its own,
pushed to it (SubscribeToShard), instead of sharing the shard's five
GetRecords calls per second with every polling reader. It is billed per
consumer-shard hour and per GB read for as long as it is registered, used
or not; a stream has at most 20.

--register NAME registers a consumer (a name already registered is left as
it is) and waits up to --wait for it to be ACTIVE. --deregister NAME first
shows the consumer it will remove: every application reading through it
stops receiving records. On a terminal you confirm; without one pass --yes
(or --dry-run to stop after the preview). It then waits up to --wait until
the consumer is gone.

Output: -o table (default) or -o json. The list is
{"stream","streamArn","consumers":[{"name","arn","status","created"}]};
consumers sorted by name; --register and --deregister print the consumer in
the same fields, under
"consumer", with "created" or "deregistered" (and "dryRun").`,
		Example: `  kinesis-shards consumers orders
  kinesis-shards consumers orders -o json | jq -r '.consumers[] | select(.status == "ACTIVE") | .name'
  kinesis-shards consumers orders --register audit-reader
  kinesis-shards consumers orders --deregister audit-reader --dry-run
  kinesis-shards consumers orders --deregister audit-reader --yes`,
		Args: exactArgs(1, "STREAM"),
		RunE: runE(f, opts, runF),
	}
	fl := c.Flags()
	fl.StringVar(&opts.Register, "register", "", "register a consumer of this name (1 to 128 of a-z, A-Z, 0-9, _ . -) and wait until it is ACTIVE")
	fl.StringVar(&opts.Deregister, "deregister", "", "deregister the consumer of this name, after a preview and a confirmation")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask before --deregister (required when stdin is not a terminal)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "with --deregister: show the preview and stop, nothing is sent")
	fl.DurationVar(&opts.Wait, "wait", time.Minute, "how long --register waits for ACTIVE and --deregister for the consumer to be gone (0: do not wait)")
	return c
}

func (o *ConsumersOptions) complete(f *Factory, c *cobra.Command, args []string) error {
	o.completeBase(f, c, args[0])
	o.Output, o.canPrompt = f.Global.Output, f.IO.CanPrompt()
	return nil
}

func (o *ConsumersOptions) validate() (err error) {
	switch {
	case o.given["register"] && o.given["deregister"]:
		return usageErrorf("--register and --deregister do not go together: one change at a time")
	case (o.Yes || o.DryRun) && !o.given["deregister"]:
		return usageErrorf("--yes and --dry-run go with --deregister NAME")
	case o.Wait < 0:
		return usageErrorf("--wait must not be negative")
	}
	for _, name := range []string{"register", "deregister"} {
		if !o.given[name] {
			continue
		}
		v := o.Register
		if name == "deregister" {
			v = o.Deregister
		}
		if err := kstream.ValidateConsumerName(v); err != nil {
			return usageErrorf("--%s: %v", name, err)
		}
	}
	if o.Output, err = outputFormat("consumers", o.Output); err != nil {
		return err
	}
	if o.given["deregister"] {
		if err := requireConfirmable(o.canPrompt, o.Yes, o.DryRun); err != nil {
			return err
		}
	}
	return o.validateBase()
}

func (o *ConsumersOptions) run(ctx context.Context, f *Factory) error {
	client, err := f.KinesisFor(ctx, o.Ref)
	if err != nil {
		return err
	}
	return runConsumers(ctx, f, client, o)
}

// consumerInfo is a consumer in the -o json documents.
type consumerInfo struct {
	Name    string `json:"name"`
	ARN     string `json:"arn"`
	Status  string `json:"status"`
	Created string `json:"created,omitempty"`
}

func consumerInfoOf(c kstream.Consumer) consumerInfo {
	i := consumerInfo{Name: c.Name, ARN: c.ARN, Status: string(c.Status)}
	if !c.Created.IsZero() {
		i.Created = c.Created.UTC().Format(time.RFC3339)
	}
	return i
}

var consumerHeader = []string{"CONSUMER", "STATUS", "CREATED", "ARN"}

func (i consumerInfo) row() []string {
	created := i.Created
	if created == "" {
		created = "-"
	}
	return []string{i.Name, i.Status, created, i.ARN}
}

// consumersDoc is the -o json document of `consumers`; the fields are
// documented in the command's help.
type consumersDoc struct {
	Stream       string         `json:"stream"`
	StreamARN    string         `json:"streamArn"`
	Consumers    []consumerInfo `json:"consumers,omitempty"`
	Consumer     *consumerInfo  `json:"consumer,omitempty"`
	Created      *bool          `json:"created,omitempty"`
	Deregistered *bool          `json:"deregistered,omitempty"`
	DryRun       *bool          `json:"dryRun,omitempty"`
}

func runConsumers(ctx context.Context, f *Factory, api consumersAPI, o *ConsumersOptions) error {
	// Consumers are kept by stream ARN: a name is looked up first.
	sum, err := kstream.Describe(ctx, api, o.Ref)
	if err != nil {
		return err
	}
	ref := o.Ref
	ref.ARN = sum.ARN
	doc := &consumersDoc{Stream: sum.Name, StreamARN: sum.ARN}
	wait := kstream.ConsumerWaitOptions{Timeout: o.Wait, MinDelay: o.PollMin, MaxDelay: o.PollMax}
	switch {
	case o.given["register"]:
		return registerConsumer(ctx, f, api, ref, o, doc, wait)
	case o.given["deregister"]:
		return deregisterConsumer(ctx, f, api, ref, o, doc, wait)
	}
	list, err := kstream.ListConsumers(ctx, api, ref)
	if err != nil {
		return err
	}
	slices.SortFunc(list, func(a, b kstream.Consumer) int { return strings.Compare(a.Name, b.Name) })
	doc.Consumers = []consumerInfo{}
	rows := make([][]string, 0, len(list))
	for _, c := range list {
		doc.Consumers = append(doc.Consumers, consumerInfoOf(c))
		rows = append(rows, consumerInfoOf(c).row())
	}
	if o.Output == "json" {
		return render.JSON(f.IO.Out, struct {
			Stream    string         `json:"stream"`
			StreamARN string         `json:"streamArn"`
			Consumers []consumerInfo `json:"consumers"`
		}{doc.Stream, doc.StreamARN, doc.Consumers})
	}
	if len(list) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "stream %s has no consumers\n", ref)
		return nil
	}
	return render.Table(f.IO.Out, consumerHeader, rows)
}

func registerConsumer(ctx context.Context, f *Factory, api consumersAPI, ref kstream.Ref, o *ConsumersOptions, doc *consumersDoc, wait kstream.ConsumerWaitOptions) error {
	c, created, err := kstream.RegisterConsumer(ctx, api, ref, o.Register)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(f.IO.ErrOut, "registered consumer %s of stream %s\n%s\n", c.Name, ref, efoBillingNote)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "consumer %s of stream %s already exists (%s)\n", c.Name, ref, c.Status)
	}
	if o.Wait > 0 && c.Status != types.ConsumerStatusActive {
		if c, err = waitConsumer(ctx, f, api, ref, c.Name, wait, true); err != nil {
			return err
		}
	}
	info := consumerInfoOf(*c)
	doc.Consumer, doc.Created = &info, &created
	if o.Output == "json" {
		return render.JSON(f.IO.Out, doc)
	}
	return render.Table(f.IO.Out, consumerHeader, [][]string{info.row()})
}

// deregisterConsumer shows the consumer, asks, deregisters it and waits
// until it is gone.
func deregisterConsumer(ctx context.Context, f *Factory, api consumersAPI, ref kstream.Ref, o *ConsumersOptions, doc *consumersDoc, wait kstream.ConsumerWaitOptions) error {
	c, err := kstream.DescribeConsumer(ctx, api, ref, o.Deregister)
	if err != nil {
		return err
	}
	info := consumerInfoOf(*c)
	doc.Consumer = &info
	jsonOut := o.Output == "json"
	// The preview: on stdout, or on stderr when stdout carries the JSON
	// document and a person has to read it before answering.
	preview := func(w io.Writer) error {
		fmt.Fprintf(w, "Deregister consumer %s of stream %s; every application reading through it stops receiving records:\n", c.Name, ref)
		return render.Table(w, consumerHeader, [][]string{info.row()})
	}
	switch {
	case !jsonOut:
		if err := preview(f.IO.Out); err != nil {
			return err
		}
	case !o.Yes && !o.DryRun:
		if err := preview(f.IO.ErrOut); err != nil {
			return err
		}
	}
	no := false
	if o.DryRun {
		fmt.Fprintln(f.IO.ErrOut, "dry run: nothing was sent")
		if jsonOut {
			doc.Deregistered, doc.DryRun = &no, &o.DryRun
			return render.JSON(f.IO.Out, doc)
		}
		return nil
	}
	if !o.Yes {
		if err := f.confirm(fmt.Sprintf("Deregister consumer %s of stream %s?", c.Name, ref)); err != nil {
			return err
		}
	}
	if err := kstream.DeregisterConsumer(ctx, api, ref, c.Name); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "deregistered consumer %s of stream %s\n", c.Name, ref)
	if o.Wait > 0 {
		if _, err := waitConsumer(ctx, f, api, ref, c.Name, wait, false); err != nil {
			return err
		}
	}
	if jsonOut {
		yes := true
		doc.Deregistered, doc.DryRun = &yes, &no
		return render.JSON(f.IO.Out, doc)
	}
	return nil
}

// waitConsumer waits for a consumer to be ACTIVE (active) or gone, with
// progress on stderr.
func waitConsumer(ctx context.Context, f *Factory, api consumersAPI, ref kstream.Ref, name string, wait kstream.ConsumerWaitOptions, active bool) (*kstream.Consumer, error) {
	onPoll, stop := consumerProgress(f, ref, name, active)
	wait.OnPoll = onPoll
	var c *kstream.Consumer
	var err error
	if active {
		c, err = kstream.WaitConsumerActive(ctx, api, ref, name, wait)
	} else {
		err = kstream.WaitConsumerGone(ctx, api, ref, name, wait)
	}
	stop(err)
	var te *kstream.ConsumerTimeoutError
	if errors.As(err, &te) {
		return nil, fmt.Errorf("%w (raise --wait to wait longer)", err)
	}
	return c, err
}
