package reshard

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// One key carries 62.6 % of the traffic; 27 % is below it in the key space
// and 10.4 % above. Four shards: the key alone on one, and the other three
// share what it leaves as evenly as the order of the keys allows (13.5,
// 13.5 and 10.4 %), not 25 %, 2 % and 10.4 % as quantiles cut it.
func TestBalancedOthersShareWhatABigKeyLeaves(t *testing.T) {
	whole := evenLayout(t, 1)
	g := layoutGraph(t, whole...)
	in := activeInput(g)
	at := func(pct float64) lineage.HashKey {
		return whole[0].KeyAtPercent(big.NewRat(int64(pct*1000), 1000))
	}
	var hs []lineage.HashKey
	var keys []string
	for i := range 270 { // below the big key: 0-50 %
		hs = append(hs, at(float64(i)*50/270))
		keys = append(keys, "low-"+itoa(i))
	}
	for range 626 {
		hs = append(hs, at(60))
		keys = append(keys, "big")
	}
	for i := range 104 { // above it: 70-100 %
		hs = append(hs, at(70+float64(i)*30/104))
		keys = append(keys, "high-"+itoa(i))
	}
	in.Sample = NewSample(time.Minute, weighted(sid(0), whole[0], time.Minute, hs, nil, keys))
	p := mustPlan(t, in, ScaleGoal{Target: 4, Balanced: true, By: ByRecords})
	checkSteps(t, p)
	got := trafficShares(t, p)
	want := []float64{0.135, 0.135, 0.626, 0.104}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 0.0015 {
			t.Fatalf("shares %v, want %v", got, want)
		}
	}
}

func itoa(i int) string { return big.NewInt(int64(i)).String() }

// The cuts are the best there are: the hottest shard as cool as any cuts
// make it, and among those, the others as even as they can be (the least
// sum of squared shares), checked against every possible set of cuts on
// small random traffic with a dominant key anywhere.
func TestBalancedCutsAreOptimal(t *testing.T) {
	rd := rand.New(rand.NewPCG(22, 12))
	for trial := range 400 {
		d := 4 + rd.IntN(14)
		n := 2 + rd.IntN(min(4, d-1))
		traffic := make([]float64, d)
		for i := range traffic {
			traffic[i] = float64(1 + rd.IntN(20))
		}
		if trial%2 == 0 {
			traffic[rd.IntN(d)] = float64(20 + rd.IntN(200)) // a dominant key
		}
		cum := make([]float64, d+1)
		for i, v := range traffic {
			cum[i+1] = cum[i] + v
		}
		score := func(cuts []int) (float64, float64) {
			mx, sq, prev := 0.0, 0.0, 0
			for _, c := range append(slices.Clone(cuts), d) {
				s := (cum[c] - cum[prev]) / cum[d]
				mx, sq, prev = max(mx, s), sq+s*s, c
			}
			return mx, sq
		}
		bestMax, bestSq := math.Inf(1), math.Inf(1)
		var walk func(cuts []int, from int)
		walk = func(cuts []int, from int) {
			if len(cuts) == n-1 {
				mx, sq := score(cuts)
				if mx < bestMax-1e-12 || (mx < bestMax+1e-12 && sq < bestSq-1e-12) {
					bestMax, bestSq = mx, sq
				}
				return
			}
			for c := from; c <= d-(n-1-len(cuts)); c++ {
				walk(append(cuts, c), c+1)
			}
		}
		walk(nil, 1)
		cuts := optimalCuts(cum, n)
		if len(cuts) != n-1 || !slices.IsSorted(cuts) || cuts[0] < 1 || cuts[n-2] > d-1 {
			t.Fatalf("trial %d: cuts %v of %d groups into %d", trial, cuts, d, n)
		}
		mx, sq := score(cuts)
		if math.Abs(mx-bestMax) > 1e-9 || math.Abs(sq-bestSq) > 1e-9 {
			t.Fatalf("trial %d (%v into %d): cuts %v give max %.6f, squares %.6f; the best is %.6f, %.6f", trial, traffic, n, cuts, mx, sq, bestMax, bestSq)
		}
	}
}

// The cuts of a stream's sample at the default 1,000 records a shard: 10
// shards balanced into 20, and 100 into 200.
func BenchmarkOptimalCuts(b *testing.B) {
	for _, size := range []struct{ shards, target int }{{10, 20}, {100, 200}} {
		b.Run(fmt.Sprintf("d=%d,n=%d", size.shards*1000, size.target), func(b *testing.B) {
			rd := rand.New(rand.NewPCG(1, 1))
			cum := make([]float64, size.shards*1000+1)
			for i := 1; i < len(cum); i++ {
				cum[i] = cum[i-1] + float64(1+rd.IntN(100))
			}
			for b.Loop() {
				optimalCuts(cum, size.target)
			}
		})
	}
}
