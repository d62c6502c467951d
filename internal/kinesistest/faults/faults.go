package faults

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Kind is what a fired rule does to the call.
type Kind int

// Error kinds answer without forwarding; the SDK returns the typed error.
// The other kinds act on the connection or on the forwarded call.
const (
	// Throttle: HTTP 400 ProvisionedThroughputExceededException (the SDK
	// retries it as a throttle unless told otherwise).
	Throttle Kind = iota + 1
	// LimitExceeded: HTTP 400 LimitExceededException.
	LimitExceeded
	// ExpiredIterator: HTTP 400 ExpiredIteratorException (not retried).
	ExpiredIterator
	// ResourceInUse: HTTP 400 ResourceInUseException.
	ResourceInUse
	// InternalFailure500: HTTP 500 InternalFailureException (retried).
	InternalFailure500
	// Unavailable503: HTTP 503 ServiceUnavailable (retried).
	Unavailable503
	// Custom: HTTP Rule.Status (default 400) with __type Rule.Code, for any
	// other error (KMSThrottlingException, AccessDeniedException, ...).
	Custom
	// Drop closes the connection without a response; the request is not
	// forwarded. The SDK sees a connection error (and retries).
	Drop
	// DropResponse forwards the request, then closes the connection instead
	// of returning the response: the call took effect but the client cannot
	// know (duplicates after a retried PutRecords, for instance).
	DropResponse
	// Stall holds the request, unforwarded, until the client gives up (its
	// context ends), the proxy closes, or Rule.Duration passes (0 = no
	// limit); then it drops the connection. A client without a deadline
	// waits for ever on Duration 0.
	Stall
	// Delay forwards the request after Rule.Duration.
	Delay
	// PartialPut (PutRecords only) removes a seeded subset of the entries,
	// Rule.PartialFraction of them (default 0.5, at least one), forwards
	// the rest, and answers with the upstream result merged with failed
	// entries (ErrorCode ProvisionedThroughputExceededException) at the
	// removed positions and FailedRecordCount raised to match. The failed
	// entries are really not written.
	PartialPut
	kindEnd
)

var kindNames = [...]string{
	Throttle: "Throttle", LimitExceeded: "LimitExceeded", ExpiredIterator: "ExpiredIterator",
	ResourceInUse: "ResourceInUse", InternalFailure500: "InternalFailure500", Unavailable503: "Unavailable503",
	Custom: "Custom", Drop: "Drop", DropResponse: "DropResponse", Stall: "Stall", Delay: "Delay",
	PartialPut: "PartialPut",
}

func (k Kind) String() string {
	if k > 0 && k < kindEnd {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Rule says which calls get which fault. All conditions that are set must
// hold for a call to fire; the first rule (in order) that fires wins.
type Rule struct {
	// Op is the operation, e.g. "GetRecords"; "*" or "" match any call
	// that names one.
	Op   string
	Kind Kind
	// Prob fires with this probability (0 < Prob <= 1), drawn from the
	// seeded generator. 0 means no probabilistic condition (always).
	Prob float64
	// Nth fires only on these 1-based numbers of the calls the rule matches,
	// counted from when the rule was set (New or SetRules).
	Nth []int
	// Every fires on every Every-th matching call after the first After:
	// After+Every, After+2*Every, ...
	Every int
	// After skips the first After matching calls.
	After int
	// Times is the most fires of this rule; 0 = unlimited.
	Times int
	// Duration of a Stall (0 = until the client gives up) or a Delay.
	Duration time.Duration
	// PartialFraction of a PutRecords call's entries to fail (PartialPut);
	// 0 means 0.5. At least one entry fails.
	PartialFraction float64
	// Code is the __type of a Custom fault; Status its HTTP status (0 =
	// 400). Message, optional, replaces the default message of any error
	// kind.
	Code    string
	Status  int
	Message string
}

func (r Rule) validate() error {
	switch {
	case r.Kind <= 0 || r.Kind >= kindEnd:
		return fmt.Errorf("unknown kind %d", r.Kind)
	case r.Prob < 0 || r.Prob > 1:
		return fmt.Errorf("field Prob: %v is outside [0, 1]", r.Prob)
	case r.PartialFraction < 0 || r.PartialFraction > 1:
		return fmt.Errorf("field PartialFraction: %v is outside [0, 1]", r.PartialFraction)
	case r.Every < 0 || r.After < 0 || r.Times < 0 || r.Duration < 0:
		return fmt.Errorf("negative Every, After, Times or Duration")
	case slices.ContainsFunc(r.Nth, func(n int) bool { return n < 1 }):
		return fmt.Errorf("field Nth: %v: call numbers start at 1", r.Nth)
	case r.Kind == PartialPut && r.Op != "" && r.Op != "*" && r.Op != opPutRecords:
		return fmt.Errorf("PartialPut applies to PutRecords, not %s", r.Op)
	case r.Kind == Custom && r.Code == "":
		return fmt.Errorf("kind Custom needs a Code")
	}
	return nil
}

// matches reports whether the rule looks at a call of op.
func (r Rule) matches(op string) bool {
	if op == "" {
		return false // not an API call
	}
	if r.Kind == PartialPut && op != opPutRecords {
		return false
	}
	return r.Op == "" || r.Op == "*" || r.Op == op
}

// Operations the Injector looks into.
const (
	opGetShardIterator = "GetShardIterator"
	opGetRecords       = "GetRecords"
	opPutRecords       = "PutRecords"
)

// UnknownShard keys GetRecordsCalls for iterators the Injector did not see
// being handed out (obtained before it was in the path, or evicted).
const UnknownShard = "?"

// itersPerShard bounds the iterator-to-shard map: a shard's older iterators
// are forgotten. A few are kept because a client may retry with the same
// iterator after a lost response.
const itersPerShard = 16

// Injector decides faults and records traffic. It is safe for concurrent
// use; one Injector may serve several RoundTrippers and proxies.
type Injector struct {
	seed uint64

	mu     sync.Mutex
	rules  []*ruleState
	counts map[string]int         // op -> calls
	fired  map[string]int         // "Op/Kind" -> fires
	calls  map[string][]time.Time // shard -> GetRecords attempts
	iters  map[string]string      // iterator -> shard
	recent map[string][]string    // shard -> its remembered iterators, oldest first
}

type ruleState struct {
	Rule
	index int
	n     int // matching calls so far
	fired int
}

// New returns an Injector with the given seed and rules. It panics on an
// invalid rule (a programming error in the test).
func New(seed uint64, rules ...Rule) *Injector {
	in := &Injector{
		seed:   seed,
		counts: map[string]int{},
		fired:  map[string]int{},
		calls:  map[string][]time.Time{},
		iters:  map[string]string{},
		recent: map[string][]string{},
	}
	in.SetRules(rules...)
	return in
}

// SetRules replaces the rules; call numbers (Nth, Every, After) and Times
// start again from zero. Counts, Fired and GetRecordsCalls are kept. It
// panics on an invalid rule.
func (in *Injector) SetRules(rules ...Rule) {
	states := make([]*ruleState, len(rules))
	for i, r := range rules {
		if err := r.validate(); err != nil {
			panic(fmt.Sprintf("faults: rule %d (%s %s): %v", i, r.Op, r.Kind, err))
		}
		r.Nth = slices.Clone(r.Nth)
		states[i] = &ruleState{Rule: r, index: i}
	}
	in.mu.Lock()
	in.rules = states
	in.mu.Unlock()
}

// decision is what happens to one call.
type decision struct {
	op   string
	rule *Rule      // nil: forward untouched
	rng  *rand.Rand // the call's own generator (PartialPut's subset)
}

// decide counts the call and picks the first rule that fires.
func (in *Injector) decide(op string) decision {
	in.mu.Lock()
	defer in.mu.Unlock()
	if op != "" {
		in.counts[op]++
	}
	d := decision{op: op}
	for _, r := range in.rules {
		if !r.matches(op) {
			continue
		}
		r.n++
		if d.rule != nil || !r.shouldFire(in.seed) {
			continue // later rules still count the call, so their numbering is stable
		}
		r.fired++
		in.fired[op+"/"+r.Kind.String()]++
		rule := r.Rule
		d.rule, d.rng = &rule, callRand(in.seed, r.index, r.n, 1)
	}
	return d
}

// shouldFire applies the rule's conditions to its n-th call.
func (r *ruleState) shouldFire(seed uint64) bool {
	switch {
	case r.n <= r.After:
		return false
	case len(r.Nth) > 0 && !slices.Contains(r.Nth, r.n):
		return false
	case r.Every > 0 && (r.n-r.After)%r.Every != 0:
		return false
	case r.Times > 0 && r.fired >= r.Times:
		return false
	case r.Prob > 0 && callRand(seed, r.index, r.n, 0).Float64() >= r.Prob:
		return false
	}
	return true
}

// callRand is the generator of rule i's n-th call (stream 0: the fire
// decision; 1: what the fault does). Deriving it from (seed, i, n) instead
// of sharing one generator makes every decision independent of the order
// in which concurrent calls reach the Injector.
func callRand(seed uint64, rule, n, stream int) *rand.Rand {
	return rand.New(rand.NewPCG(mix(seed^uint64(rule)<<32^uint64(stream)), mix(uint64(n))))
}

// mix is SplitMix64's finalizer: it spreads neighbouring inputs apart.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Counts returns the calls seen per operation, faulted ones included.
func (in *Injector) Counts() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.counts)
}

// Fired returns the faults fired per "Op/Kind", e.g. "GetRecords/Throttle".
func (in *Injector) Fired() map[string]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.fired)
}

// GetRecordsCalls returns, per shard id, the time of every GetRecords
// attempt (faulted ones included), in arrival order. Shards are known by
// following iterators: GetShardIterator's ShardId to the ShardIterator it
// returns, and a GetRecords iterator's shard to its NextShardIterator. Keys
// are bare shard ids, so track one stream per Injector; iterators it never
// saw handed out count under UnknownShard.
func (in *Injector) GetRecordsCalls() map[string][]time.Time {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[string][]time.Time, len(in.calls))
	for k, v := range in.calls {
		out[k] = slices.Clone(v)
	}
	return out
}

// getRecordsAttempt records a GetRecords call on the iterator's shard.
func (in *Injector) getRecordsAttempt(iter string, at time.Time) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	shard, ok := in.iters[iter]
	if !ok {
		shard = UnknownShard
	}
	in.calls[shard] = append(in.calls[shard], at)
	return shard
}

// rememberIterator maps an iterator to its shard.
func (in *Injector) rememberIterator(iter, shard string) {
	if iter == "" || shard == "" || shard == UnknownShard {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, ok := in.iters[iter]; ok {
		return
	}
	in.iters[iter] = shard
	r := append(in.recent[shard], iter)
	if len(r) > itersPerShard {
		delete(in.iters, r[0])
		r = slices.Delete(r, 0, 1)
	}
	in.recent[shard] = r
}

// MaxCallsInWindow returns the largest number of ts that fall within any
// window of length w (t <= x < t+w), e.g. to check "no more than 5
// GetRecords per second per shard". ts need not be sorted.
func MaxCallsInWindow(ts []time.Time, w time.Duration) int {
	if w <= 0 {
		return 0
	}
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi := range s {
		for s[hi].Sub(s[lo]) >= w {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// opOf returns the operation named by an X-Amz-Target header such as
// "Kinesis_20131202.GetRecords" (or "DynamoDB_20120810.GetItem").
func opOf(target string) string {
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		return target[i+1:]
	}
	return target
}
