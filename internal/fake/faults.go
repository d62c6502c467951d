package fake

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"
)

// Faults answers a share of the calls with an error instead of serving
// them, so that a client's handling of throttling, failures and expired
// iterators can be practised without waiting for the service to produce
// them. A faulted call changes nothing: the fault is drawn before the call
// looks at any stream (a faulted PutRecords writes no record). It is safe
// for concurrent use; ParseFaults makes one.
type Faults struct {
	mu  sync.Mutex
	rng *rand.Rand
	// odds are the faults each operation may get, in the order of
	// faultKinds; their probabilities add up to at most 1.
	odds map[string][]chance
}

// chance is one kind of fault and the probability it answers a call.
type chance struct {
	kind string
	p    float64
}

// The kinds of fault, in the order they are drawn.
var faultKinds = []string{"throttle", "error", "expire"}

// dataPlane are the calls the service throttles per shard, with
// ProvisionedThroughputExceededException; it throttles every other call
// (ListShards, DescribeStreamSummary, the reshard and consumer calls,
// SubscribeToShard) with LimitExceededException.
var dataPlane = map[string]bool{"GetRecords": true, "GetShardIterator": true, "PutRecord": true, "PutRecords": true}

// faultOps are the operations a fault can name: the ones the fake serves.
func faultOps() []string {
	names := []string{"SubscribeToShard"}
	for name := range ops {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// appliesTo says whether a kind of fault can answer op: expire is
// GetRecords' only (an iterator is only read there).
func appliesTo(kind, op string) bool {
	return kind != "expire" || op == "GetRecords"
}

// ParseFaults reads a list of faults, separated by commas: KIND=P answers
// every call the kind applies to with that fault with probability P (more
// than 0, at most 1), KIND:OPERATION=P only that operation's calls (it
// overrides KIND=P there), and seed=N makes the draws repeatable. Kinds:
// throttle (ProvisionedThroughputExceededException on GetRecords,
// GetShardIterator, PutRecord and PutRecords, LimitExceededException on
// the other calls), error (a 500 InternalFailure, on any call) and expire
// (ExpiredIteratorException, on GetRecords). An error names the part of
// the list that is wrong.
func ParseFaults(spec string) (*Faults, error) {
	all := map[string]float64{}              // by kind
	perOp := map[string]map[string]float64{} // by kind, then operation
	seed, seeded := uint64(0), false
	known := faultOps()
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("no fault given: say which, such as throttle=0.1")
	}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("%q has an empty fault between commas", spec)
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not KIND=PROBABILITY (such as throttle=0.1)", part)
		}
		if name == "seed" {
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: the seed must be a whole number from 0 to %d", part, uint64(math.MaxUint64))
			}
			if seeded {
				return nil, fmt.Errorf("%q: the seed is given twice", part)
			}
			seed, seeded = n, true
			continue
		}
		kind, op, forOp := strings.Cut(name, ":")
		if !slices.Contains(faultKinds, kind) {
			return nil, fmt.Errorf("%q: unknown fault %q: use throttle, error or expire (or seed=N)", part, kind)
		}
		if forOp && !slices.Contains(known, op) {
			return nil, fmt.Errorf("%q: %q is not an operation this fake Kinesis serves (such as GetRecords, PutRecords, ListShards)", part, op)
		}
		if forOp && !appliesTo(kind, op) {
			return nil, fmt.Errorf("%q: expire applies to GetRecords only", part)
		}
		p, err := strconv.ParseFloat(val, 64)
		if err != nil || math.IsNaN(p) || p <= 0 || p > 1 {
			return nil, fmt.Errorf("%q: the probability must be a number more than 0 and at most 1", part)
		}
		m := all
		if forOp {
			if perOp[kind] == nil {
				perOp[kind] = map[string]float64{}
			}
			m = perOp[kind]
		} else {
			op = kind
		}
		if _, dup := m[op]; dup {
			return nil, fmt.Errorf("%q: %s is given twice", part, name)
		}
		m[op] = p
	}
	fs := &Faults{odds: map[string][]chance{}}
	for _, op := range known {
		sum := 0.0
		for _, kind := range faultKinds {
			p, ok := perOp[kind][op]
			if !ok && appliesTo(kind, op) {
				p, ok = all[kind]
			}
			if ok {
				fs.odds[op] = append(fs.odds[op], chance{kind, p})
				sum += p
			}
		}
		if sum > 1+1e-9 {
			return nil, fmt.Errorf("the faults of %s add up to a probability of %g: at most 1", op, sum)
		}
	}
	if !seeded {
		seed = rand.Uint64()
	}
	fs.rng = rand.New(rand.NewPCG(seed, seed))
	return fs, nil
}

// fault draws whether op's call gets a fault, and which: nil serves it.
// A nil Faults never faults.
func (fs *Faults) fault(op string) error {
	if fs == nil || len(fs.odds[op]) == 0 {
		return nil
	}
	fs.mu.Lock()
	u := fs.rng.Float64()
	fs.mu.Unlock()
	for _, c := range fs.odds[op] {
		if u -= c.p; u < 0 {
			return faultError(c.kind, op)
		}
	}
	return nil
}

// faultError is the error the service answers with for such a fault; its
// message says it was injected, so that nobody hunts for a cause.
func faultError(kind, op string) error {
	switch {
	case kind == "error":
		return &smithy.GenericAPIError{Code: "InternalFailure", Message: "Internal service failure (an injected fault).", Fault: smithy.FaultServer}
	case kind == "expire":
		return &types.ExpiredIteratorException{Message: aws.String("Iterator expired (an injected fault).")}
	}
	msg := aws.String(fmt.Sprintf("Rate exceeded for %s under account 123456789012 (an injected fault).", op))
	if dataPlane[op] {
		return &types.ProvisionedThroughputExceededException{Message: msg}
	}
	return &types.LimitExceededException{Message: msg}
}
