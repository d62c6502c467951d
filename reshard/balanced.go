package reshard

import (
	"fmt"
	"math"
	"strings"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Balanced scaling: the boundaries of N shards cut the sampled traffic
// rather than the key space.
//
// The traffic is the stream's: every open shard's sampled records, each
// weighted by what it stands for per second of its sample (so a busy shard
// counts for what it carries however many of its records were read), in
// bytes or records. Records of one partition key share one hash, and a
// boundary lies between two hashes, so a key is never divided. The cuts
// are the best there are (optimalCuts): the hottest shard as cool as any
// cuts can make it, and among such cuts, the others as even as the order
// of the keys allows. Quantiles alone are not enough: with one key at 62 %
// of the traffic, cutting at a quarter of the traffic leaves 25 % and 2 %
// on two shards where 13.5 % and 13.5 % are reachable with the same calls.
// The boundary goes halfway across the gap between two neighbouring
// sampled hashes; any key in the gap gives the same sampled shares, so a
// boundary already anywhere in it is kept.
//
// A boundary already in place also stays when the traffic below it is
// within BalanceTolerance of a shard's fair share of the quantile: a
// balanced layout then stays put when it is balanced again with a new
// sample, instead of moving every boundary by sampling noise.

// BalanceTolerance is how far, as a share of one shard's fair share (1/N
// of the traffic), a boundary already in place may be from its quantile
// and stay: each shard then carries 1/N ± 10 % of it.
const BalanceTolerance = 0.05

// trafficGroup is the sampled traffic of one hash: per second, in the
// plan's measure.
type trafficGroup struct {
	hash    lineage.HashKey
	traffic float64
	key     string // a partition key of it
}

// streamTraffic merges the samples of the open shards into groups sorted by
// hash.
func streamTraffic(in Input, by Measure) ([]trafficGroup, error) {
	var out []trafficGroup
	for _, sh := range in.Graph.Open() {
		ss := in.Sample.Shard(sh.ID)
		if ss == nil {
			return nil, refuse(ErrNoSample, fmt.Sprintf("shard %s of stream %s was not sampled, so its traffic is unknown and the layout cannot be balanced; sample every open shard", sh.ID, in.Stream.Name))
		}
		cum := ss.cumOf(by)
		span := ss.span(in.Sample.Window).Seconds()
		for i, h := range ss.Hashes {
			t := (cum[i+1] - cum[i]) / span
			if n := len(out); n > 0 && out[n-1].hash == h {
				out[n-1].traffic += t
				continue
			}
			g := trafficGroup{hash: h, traffic: t}
			if i < len(ss.Keys) {
				g.key = ss.Keys[i]
			}
			out = append(out, g)
		}
	}
	return out, nil
}

// balancedTargets picks the N-1 cuts between groups and their ranges.
func balancedTargets(in Input, groups []trafficGroup, n int, by Measure) ([]target, error) {
	d := len(groups)
	cum := make([]float64, d+1)
	for i, g := range groups {
		cum[i+1] = cum[i] + g.traffic
	}
	total := cum[d]
	if total <= 0 {
		return nil, refuse(ErrNoSample, fmt.Sprintf("no traffic of stream %s was sampled, so there is nothing to balance; sample a longer window, or scale to the even layout", in.Stream.Name))
	}
	if d < n {
		return nil, refuse(ErrTooFewSamples, fmt.Sprintf("the sample of stream %s holds %s, and %d shards balanced by traffic need at least %d (a key is never divided); sample a longer window, or scale to the even layout", in.Stream.Name, plural(d, "distinct partition key"), n, n))
	}
	tol := BalanceTolerance * total / float64(n)
	hashes := make([]lineage.HashKey, d)
	for i, g := range groups {
		hashes[i] = g.hash
	}
	cuts := optimalCuts(cum, n)
	out := make([]target, 0, n-1)
	prev := 0 // the end of the previous target's range
	for j, c := range cuts {
		// A boundary already in place may stay anywhere the traffic below
		// it is within tol of the cut's, short of the next cut.
		next := d
		if j+1 < len(cuts) {
			next = cuts[j+1]
		}
		lo, hi := c, c
		for lo-1 > prev && math.Abs(cum[lo-1]-cum[c]) <= tol {
			lo--
		}
		for hi+1 < next && math.Abs(cum[hi+1]-cum[c]) <= tol {
			hi++
		}
		from, _ := hashes[lo-1].Add64(1)
		out = append(out, target{key: gapKey(hashes[c-1], hashes[c]), lo: from, hi: hashes[hi]})
		prev = hi
	}
	return out, nil
}

// optimalCuts divides d groups (cum[i] is the traffic of groups 0..i-1, so
// cum has d+1 entries, d >= n) into n non-empty runs and returns the n-1
// cuts (run j ends before group cuts[j]). The cuts are the best there are:
// first the largest run as small as any cuts make it (found by bisection:
// greedy packing says whether n runs of at most C exist), then, among the
// cuts that keep every run within that, the least sum of squared runs, so
// that the runs other than the largest are as even as the order of the
// groups allows.
//
// The second step is a dynamic programme over (runs, groups); a convex
// cost of a run's traffic makes the best previous cut move monotonically
// with the cut, so each of the n layers is solved by divide and conquer in
// O(d log d). The cap enters the cost as a steep linear penalty, which
// keeps it convex.
func optimalCuts(cum []float64, n int) []int {
	d := len(cum) - 1
	total := cum[d]
	if n <= 1 || total <= 0 {
		cuts := make([]int, 0, max(n-1, 0))
		for j := 1; j < n; j++ {
			cuts = append(cuts, j) // nothing to weigh: any non-empty runs
		}
		return cuts
	}
	// The least largest run: between the largest group and the total.
	lo, hi := 0.0, total
	for i := range d {
		lo = max(lo, cum[i+1]-cum[i])
	}
	fits := func(c float64) bool {
		runs, start := 1, 0
		for i := 1; i <= d; i++ {
			if cum[i]-cum[start] > c {
				runs++
				start = i - 1
			}
		}
		return runs <= n
	}
	if !fits(lo) {
		for range 100 {
			mid := lo + (hi-lo)/2
			if mid <= lo || mid >= hi {
				break
			}
			if fits(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
	} else {
		hi = lo
	}
	capRun := hi / total * (1 + 1e-9)
	cost := func(p, c int) float64 {
		s := (cum[c] - cum[p]) / total
		return s*s + 1e6*max(0, s-capRun)
	}
	prevF := make([]float64, d+1) // the best of j-1 runs over groups 0..c-1
	curF := make([]float64, d+1)
	for c := range prevF {
		prevF[c] = math.Inf(1)
	}
	prevF[0] = 0
	from := make([][]int32, n+1) // from[j][c]: where run j starts when it ends at c
	for j := 1; j <= n; j++ {
		from[j] = make([]int32, d+1)
		for c := range curF {
			curF[c] = math.Inf(1)
		}
		// Run j ends at c in [j, d-(n-j)] and starts at p in [j-1, c-1].
		var solve func(cLo, cHi, pLo, pHi int)
		solve = func(cLo, cHi, pLo, pHi int) {
			if cLo > cHi {
				return
			}
			c := (cLo + cHi) / 2
			best, bestP := math.Inf(1), pLo
			for p := pLo; p <= min(c-1, pHi); p++ {
				if v := prevF[p] + cost(p, c); v < best {
					best, bestP = v, p
				}
			}
			curF[c], from[j][c] = best, int32(bestP)
			solve(cLo, c-1, pLo, bestP)
			solve(c+1, cHi, bestP, pHi)
		}
		solve(j, d-(n-j), j-1, d-(n-j+1))
		prevF, curF = curF, prevF
	}
	cuts := make([]int, n-1)
	c := d
	for j := n; j > 1; j-- {
		c = int(from[j][c])
		cuts[j-2] = c
	}
	return cuts
}

func planBalanced(in Input, p *Plan, g ScaleGoal) error {
	if in.Sample == nil {
		return refuse(ErrNoSample, fmt.Sprintf("balancing stream %s needs a sample of its traffic", in.Stream.Name))
	}
	by := g.By
	if by == "" {
		by = ByRecords
	}
	groups, err := streamTraffic(in, by)
	if err != nil {
		return err
	}
	targets, err := balancedTargets(in, groups, g.Target, by)
	if err != nil {
		return err
	}
	n := len(p.Before)
	m := matchTargets(p.Before, targets)
	what := fmt.Sprintf("balanced by sampled %s", by)
	if len(m.missing) == 0 && len(m.extra) == 0 {
		p.Description = fmt.Sprintf("nothing to do: stream %s already has %d open shards %s", in.Stream.Name, n, what)
		p.Notes = append(p.Notes, fmt.Sprintf("Each boundary divides the sampled traffic within %g%% of a shard's fair share of where balance puts it.", BalanceTolerance*100))
		return nil
	}
	if err := p.planLayout(targets, fmt.Sprintf("%s (%s)", what, plural(in.Sample.Records, "sampled record")),
		fmt.Sprintf("a boundary already in place stays when it divides the sampled traffic within %g%% of a shard's fair share of its target", BalanceTolerance*100)); err != nil {
		return err
	}
	p.Notes = append(p.Notes, "The shares of traffic are those of the sample: traffic that changes, or keys the sample missed, shift them.")
	p.Notes = append(p.Notes, bigKeyNotes(groups, p.After, g.Target, by)...)
	p.Notes = append(p.Notes, p.openRangeNote())
	return nil
}

// bigKeyNotes names each key that carries more than 1/n of the traffic: it
// always lands on one shard, so that shard carries at least as much.
func bigKeyNotes(groups []trafficGroup, after []Slot, n int, by Measure) []string {
	total := 0.0
	for _, g := range groups {
		total += g.traffic
	}
	var out []string
	for _, g := range groups {
		share := g.traffic / total
		if share <= 1/float64(n) {
			continue
		}
		holder := ""
		for _, s := range after {
			if s.Range.Contains(g.hash) {
				holder = s.Name()
			}
		}
		key := g.key
		if key == "" {
			key = "hash " + g.hash.String()
		} else {
			key = "partition key " + quoteKey(key)
		}
		out = append(out, fmt.Sprintf("%s carries %s of the sampled %s, more than a shard's fair share of 1/%d: a key always lands on one shard, so %s carries at least that much, and no layout can spread it.",
			key, percent(share), by, n, holder))
	}
	return out
}

// quoteKey shows a partition key in a message: quoted when it holds spaces
// or quotes, shortened when long.
func quoteKey(k string) string {
	if len(k) > 64 {
		k = k[:61] + "..."
	}
	if strings.ContainsAny(k, " \t\"'") || k == "" {
		return fmt.Sprintf("%q", k)
	}
	return k
}

// percent prints a share as a percentage with one decimal: 31.2%.
func percent(f float64) string {
	return fmt.Sprintf("%.1f%%", f*100)
}
