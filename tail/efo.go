package tail

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
	"github.com/kinesis-shards/kinesis-shards/internal/efo"
)

// The second kind of shard reader: enhanced fan-out. A run reads every
// shard one way, polling (reader.go) or subscribed (here); both hand their
// records to the same conversion (convert.go) and delivery (deliverBatch),
// record the same positions and SHARD_END, and report their tip the same
// way, so the scheduler, the ordering, the checkpoint file and every
// option are one and the same for both, and a checkpoint file written by
// one kind of run resumes in the other.

// EFO makes a tail read through an enhanced fan-out consumer instead of
// polling GetRecords: its own 2 MiB per second per shard, pushed, taking
// nothing from the shard's five GetRecords calls per second.
type EFO struct {
	// API subscribes, and describes the consumer when the service says a
	// shard or the consumer is not found.
	API EFOAPI
	// ConsumerARN is an ACTIVE consumer of the stream.
	ConsumerARN string
	// Pacer spaces the calls per consumer and shard; share one per
	// process. nil: the tail's own.
	Pacer *efo.Pacer
}

// EFOAPI is the part of the Kinesis client a subscribed reader uses;
// *kinesis.Client satisfies it.
type EFOAPI interface {
	efo.API
	DescribeStreamConsumer(ctx context.Context, in *kinesis.DescribeStreamConsumerInput, optFns ...func(*kinesis.Options)) (*kinesis.DescribeStreamConsumerOutput, error)
}

// ErrConsumerGone: the consumer was deregistered while the tail read.
var ErrConsumerGone = errors.New("consumer deregistered")

// Ends of one efo.Reader that the subscribed reader decides itself.
var (
	// errResubscribe: a listing showed the shard closed since the
	// subscription started; a new one tells whether it is drained.
	errResubscribe = errors.New("the shard closed since this subscription started")
	// errDrained: the closed shard has nothing more (see event).
	errDrained = errors.New("the closed shard is drained")
	// errStopped: nothing more is delivered (--max-records, a lost lease).
	errStopped = errors.New("delivery stopped")
)

// read reads the shard with the kind of reader of the run.
func (r *reader) read(ctx context.Context) error {
	if r.t.opts.EFO != nil {
		return r.subscribe(ctx)
	}
	return r.run(ctx)
}

// subscribe reads the shard through SubscribeToShard to its end. The
// efo.Reader subscribes again after every subscription's end, failure or
// refusal; a new one is made here only where this reader decides: a shard
// that closed under a subscription, and a refused resume "after" the last
// record of a closed shard.
func (r *reader) subscribe(ctx context.Context) error {
	r.calling.Store(r.t.now().UnixNano()) // awaiting the first event
	start := efoStart(r.start)
	refused := "" // the sequence number an AFTER start was refused at
	var total efo.Stats
	defer func() {
		r.logf("enhanced fan-out: %d subscriptions (%d re-subscriptions), %d events, %d records",
			total.Subscriptions, max(0, total.Subscriptions-1), total.Events, total.Records)
	}()
	var fails failureRun
	room := &eventRoom{ticket: pageTicket{budget: r.t.pages}}
	defer room.ticket.drop()
	defer r.holding.Store(false) // a paused event's records (event) are no longer anyone's
	for {
		knownClosed := r.closed.Load()
		er, err := efo.NewReader(r.t.opts.EFO.API, r.efoOptions(start, &fails, room))
		if err != nil {
			return err
		}
		end, err := er.Run(ctx, func(_ context.Context, b efo.Batch) error { return r.event(b, knownClosed, &fails, room) })
		st := er.Stats()
		total.Subscriptions += st.Subscriptions
		total.Events += st.Events
		total.Records += st.Records
		class := awserr.Classify(err)
		switch {
		case err == nil:
			return r.end(end.ChildShards)
		case errors.Is(err, errDrained):
			r.logf("closed, and a subscription made since says it is drained: its end")
			return r.end(nil)
		case errors.Is(err, errResubscribe):
			start = er.Resume()
			r.logf("closed since its subscription started; subscribing again from %s to see whether it is drained", start)
		case errors.Is(err, errStopped), ctx.Err() != nil:
			return nil
		case class.Kind == awserr.NotFound:
			return r.subscribeNotFound(ctx, err)
		case class.Kind == awserr.Invalid:
			p := er.Resume()
			if p.Type != types.ShardIteratorTypeAfterSequenceNumber || p.SequenceNumber == refused {
				return fmt.Errorf("shard %s: the service refused to subscribe from %s (from the checkpoint or the last record): %s", r.id, p, class.Message)
			}
			// As with GetShardIterator: "after" the last record of a
			// closed shard may be refused; read at it and skip it.
			refused = p.SequenceNumber
			r.logf("subscribing from %s refused (%s); subscribing at it and skipping it", p, class.Message)
			start = efo.AtSequence(p.SequenceNumber)
			r.skip = resumeSkip{seq: p.SequenceNumber, sub: math.MaxInt64}
		default:
			return err
		}
	}
}

// event takes one event of a subscription: its records are converted and
// delivered as a GetRecords page is, and it tells whether the reader is
// at the shard's tip (MillisBehindLatest 0, a shard the listings show
// open).
//
// A closed shard's end comes as the last event, which names the children.
// A service that never sends it (kinesis-mock) keeps sending empty events
// instead, so an empty event that is caught up is taken as the end of a
// shard a listing showed closed, when the subscription it came in was made
// after that listing: that subscription started after the shard closed,
// so no record can follow the position it started from beyond what it has
// sent, and "empty and caught up" says it sent everything. An event of an
// older subscription proves nothing (it may have waited in a buffer, made
// before the last records were written): the reader subscribes again and
// asks the new subscription.
func (r *reader) event(b efo.Batch, knownClosed bool, fails *failureRun, room *eventRoom) error {
	// The page budget first: an event there is no room for is not taken
	// (the subscription closes, and resumes before it once there is).
	if weight := eventWeight(b.Records); weight > 0 {
		if !room.ticket.tryHold(weight) {
			room.last = weight
			// Records are waiting for room: never idle meanwhile. The
			// event that delivers them (the resumed subscription's
			// first) clears it.
			r.holding.Store(true)
			return efo.ErrNoRoom
		}
		defer room.ticket.drop()
	}
	*fails = failureRun{}
	if len(b.Records) > 0 {
		// Never idle while its records are on their way out.
		r.holding.Store(true)
		defer r.holding.Store(false)
	}
	defer func() { r.calling.Store(r.t.now().UnixNano()) }() // the next one is awaited
	batch, size := r.convert(b.Records)
	if r.t.opts.OnPoll != nil {
		r.t.opts.OnPoll(PollStats{ShardID: r.id, Records: len(b.Records), Bytes: size, MillisBehind: b.MillisBehindLatest, At: r.t.now()})
	}
	if len(batch) > 0 {
		more, err := r.t.deliverBatch(r, batch)
		if err != nil {
			return err
		}
		if !more {
			return errStopped
		}
	}
	if b.Continuation == "" {
		return nil // the shard's last event: Run returns its end
	}
	caughtUp := b.MillisBehindLatest == 0
	closed := r.closed.Load()
	if closed && caughtUp && len(b.Records) == 0 {
		if knownClosed {
			return errDrained
		}
		return errResubscribe
	}
	r.setTip(caughtUp && !closed)
	return nil
}

// efoOptions are the efo.Reader's options: transient failures are retried
// for as long as they last, as the polling reader does (giving up would
// end the tail with records unread), and each one marks the reader as not
// at its tip until the next event.
func (r *reader) efoOptions(start efo.Position, fails *failureRun, room *eventRoom) efo.Options {
	e := r.t.opts.EFO
	o := efo.Options{ConsumerARN: e.ConsumerARN, ShardID: r.id, Start: start, Pacer: r.t.pacer, Logf: r.t.opts.Logf,
		MaxFailures: math.MaxInt32,
		// Waits in line with the polling readers, and keeps what it was
		// given for the next event.
		AwaitRoom: func(ctx context.Context) error { return room.ticket.hold(ctx, room.last) },
		OnFailure: func(err error) {
			r.setFailing()
			now := r.t.now()
			if fails.failures == 0 {
				fails.since = now
			}
			fails.failures++
			if d := now.Sub(fails.since); !fails.warned && d >= throttleWarnAfter {
				fails.warned = true
				r.t.opts.Warnf("shard %s: SubscribeToShard has failed for %s (%v); tail keeps subscribing and loses nothing", r.id, d.Round(time.Second), err)
			}
		},
	}
	if r.t.opts.efoTune != nil {
		r.t.opts.efoTune(&o)
	}
	return o
}

// subscribeNotFound decides what a ResourceNotFound means. It
// may name the consumer as well as the shard: a consumer deregistered
// under the tail (by another tail with the same consumer that exited,
// say) is an error, never the end of closed shards it would then skip.
// Otherwise it is the shard's, read as the polling reader reads it.
func (r *reader) subscribeNotFound(ctx context.Context, err error) error {
	name := efo.ConsumerName(r.t.opts.EFO.ConsumerARN)
	cctx, cancel := context.WithTimeout(ctx, r.t.opts.CallTimeout)
	_, derr := awscall.Do(cctx, awscall.DescribeStreamConsumer, func() (*kinesis.DescribeStreamConsumerOutput, error) {
		return r.t.opts.EFO.API.DescribeStreamConsumer(cctx, &kinesis.DescribeStreamConsumerInput{ConsumerARN: aws.String(r.t.opts.EFO.ConsumerARN)})
	})
	cancel()
	switch {
	case awserr.Of(derr) == awserr.NotFound:
		return fmt.Errorf("shard %s: %w: consumer %s is gone (was another tail using it stopped?)", r.id, ErrConsumerGone, name)
	case derr != nil:
		return fmt.Errorf("%w (and describing consumer %s failed: %v)", err, name, derr)
	}
	if err := r.notFound(ctx); err != nil {
		return err
	}
	return r.end(nil)
}

// eventRoom is a subscribed reader's reservation in the page budget: held
// while an event is converted and delivered, or, after efo.ErrNoRoom,
// from the moment there is room again until the next event.
type eventRoom struct {
	ticket pageTicket
	last   int64 // the weight of the event there was no room for
}

// eventWeight is an event's weight in the page budget: its records'
// payloads, as a polling reader's page is weighed, and at least
// eventFloor. A subscription whose reader holds an event stays open, and
// the SDK and the connection keep what the service sends meanwhile behind
// it; the floor counts that, so that the readers holding events while
// stdout is stalled are a few, however small the events and however many
// the shards. An event without records is delivered without waiting for
// stdout and weighs nothing.
func eventWeight(recs []types.Record) int64 {
	if len(recs) == 0 {
		return 0
	}
	var n int64
	for _, r := range recs {
		n += int64(len(r.Data))
	}
	return max(n, eventFloor)
}

const eventFloor = 1 << 20

// eventsWithin is how long a subscribed reader may go without an event
// and still count as at its tip (reader.unanswered): the service sends
// events while a shard is idle too (kinesis-mock: one a second), so a
// longer silence is a stalled stream or a subscription that has not
// answered yet, which may hold records.
const eventsWithin = 3 * time.Second

// efoStart is a reader's start as a starting position.
func efoStart(sp startPoint) efo.Position {
	switch sp.kind {
	case types.ShardIteratorTypeLatest:
		return efo.Latest()
	case types.ShardIteratorTypeAtTimestamp:
		return efo.AtTimestamp(sp.ts)
	case types.ShardIteratorTypeAtSequenceNumber:
		return efo.AtSequence(sp.seq)
	case types.ShardIteratorTypeAfterSequenceNumber:
		return efo.AfterSequence(sp.seq)
	}
	return efo.TrimHorizon()
}
