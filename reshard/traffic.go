package reshard

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// Hot-shard analysis: from the records of each open shard over a window
// (ReadWindows), what each shard carries against its write quota, its top
// partition keys, and a verdict. Whether a split helps is a matter of
// rates against the quota, not of shares: a key that is half of a shard at
// 164 % of its quota writes 85 % of a quota by itself, and a split just
// beside it leaves both children under theirs. So the verdict is "one key"
// (no split can help) only when one key alone writes more than a shard's
// quota, or when it is so nearly all of the shard that no split takes a
// tenth off the hotter child; otherwise a hot shard gets the split point
// and what each child would carry against its quota. Records whose partition key hashes
// outside the shard were written with an explicit hash key, whose place
// in the range GetRecords does not return: their share is said, and no
// split point is claimed for them. A sampled window whose slices disagree
// (bursty writes, a thin sample) is given as a range, and a shard whose
// range straddles the hot threshold is "uncertain", never "cold". Pure: the
// same windows give the same report.

// A shard's write quota (docs/KINESIS-NOTES.md §1): whichever it reaches
// first throttles its writers. Bytes are data plus partition key.
const (
	WriteBytesPerSecond   = 1 << 20
	WriteRecordsPerSecond = 1000
)

// Hot analysis defaults.
const (
	DefaultTopKeys = 5
	// DefaultHotShare: a shard that uses at least half of its write quota
	// over the window is hot. An average over the window hides peaks of a
	// second, which is what throttles writers: a shard near half its
	// quota on average is near all of it at its peaks.
	DefaultHotShare = 0.5
	// DefaultOneKeyShare: a hot shard whose top key carries more than half
	// its traffic is hot because of that key: no split point leaves both
	// children below the key's share.
	DefaultOneKeyShare = 0.5
)

// minSplitGain is the least share of a hot shard's load the best split
// must take off its hotter child for the verdict to offer it: a key that
// is nearly all of a shard stays where it is, whatever the split.
const minSplitGain = 0.1

// HotOptions tune Analyze. The zero value takes the defaults.
type HotOptions struct {
	Top         int     // partition keys listed per shard; 0: 5
	HotShare    float64 // of the write quota, for a shard to be hot; 0: 0.5
	OneKeyShare float64 // of a hot shard's traffic, for one key to be the cause; 0: 0.5
}

func (o *HotOptions) defaults() {
	if o.Top <= 0 {
		o.Top = DefaultTopKeys
	}
	if o.HotShare <= 0 {
		o.HotShare = DefaultHotShare
	}
	if o.OneKeyShare <= 0 {
		o.OneKeyShare = DefaultOneKeyShare
	}
}

// HotReport is the analysis of a stream's open shards over one window
// (kinesis-shards hot -o json).
type HotReport struct {
	Stream      string    `json:"stream"`
	WindowStart time.Time `json:"windowStart"`
	WindowEnd   time.Time `json:"windowEnd"`
	// Sampled: some shard held more records than were read, so its
	// figures are estimates (see each shard's sampledShare).
	Sampled bool           `json:"sampled"`
	Shards  []ShardTraffic `json:"shards"`
}

// ShardTraffic is what one shard carried over the window.
type ShardTraffic struct {
	ShardID string `json:"shardId"`
	// Records and Bytes (data + partition keys) over the covered window:
	// estimates when Sampled.
	Records          int64   `json:"records"`
	Bytes            int64   `json:"bytes"`
	RecordsPerSecond float64 `json:"recordsPerSecond"`
	BytesPerSecond   float64 `json:"bytesPerSecond"`
	// WriteQuotaShare is the larger of the two shares of the write quota
	// (records/s of 1,000, bytes/s of 1 MiB), WriteQuotaBy which one.
	WriteQuotaShare float64    `json:"writeQuotaShare"`
	WriteQuotaBy    Measure    `json:"writeQuotaBy"`
	TopKeys         []KeyShare `json:"topKeys"`
	Verdict         Verdict    `json:"verdict"`
	// Sampled: the window held more records than were read; SampledShare
	// is the share that was read.
	Sampled      bool    `json:"sampled"`
	SampledShare float64 `json:"sampledShare"`
	// RecordsRead is how many records were read; Seconds the part of the
	// window the figures cover (less than the window when the read
	// stopped early: Stopped says why).
	RecordsRead int     `json:"recordsRead"`
	Seconds     float64 `json:"seconds"`
	Stopped     string  `json:"stopped,omitempty"`
	// OutsideRange counts records whose hash lies outside the shard
	// (written with an ExplicitHashKey, which GetRecords does not return):
	// they count in the figures but not for a split point. ExplicitShare
	// is their share of the traffic, in WriteQuotaBy's measure.
	OutsideRange  int     `json:"outsideRange,omitempty"`
	ExplicitShare float64 `json:"explicitHashKeyShare,omitempty"`
	// When Sampled: WriteQuotaLow and WriteQuotaHigh bound
	// WriteQuotaShare (two standard errors of the slices' estimates, and
	// never below what was read), and ReadTimeShare is the share of the
	// covered window's time the records read come from.
	WriteQuotaLow  float64 `json:"writeQuotaLow,omitempty"`
	WriteQuotaHigh float64 `json:"writeQuotaHigh,omitempty"`
	ReadTimeShare  float64 `json:"readTimeShare,omitempty"`
}

// KeyShare is one partition key's part of a shard's traffic.
type KeyShare struct {
	PartitionKey string `json:"partitionKey"`
	Records      int64  `json:"records"`
	Bytes        int64  `json:"bytes"`
	// Share is of the shard's traffic in its WriteQuotaBy measure;
	// RecordShare and ByteShare are both.
	Share       float64 `json:"share"`
	RecordShare float64 `json:"recordShare"`
	ByteShare   float64 `json:"byteShare"`
}

// VerdictKind says why a shard is hot, if it is.
type VerdictKind string

// The verdicts.
const (
	VerdictManyKeys  VerdictKind = "many-keys"          // a split spreads it
	VerdictOneKey    VerdictKind = "one-key"            // one key alone is over the quota: no split helps
	VerdictExplicit  VerdictKind = "explicit-hash-keys" // most of it was placed by explicit hash keys: where to split is unknown
	VerdictUncertain VerdictKind = "uncertain"          // the sample cannot tell hot from cold
	VerdictCold      VerdictKind = "cold"               // not hot
)

// Verdict is the one-sentence diagnosis of a shard.
type Verdict struct {
	Kind VerdictKind `json:"kind"`
	Text string      `json:"text"`
	// SplitAt (many-keys) is the hash key that puts about half the
	// traffic on each child, LowerShare and UpperShare what each gets
	// (of the shard's traffic; with ExplicitShare, each may get up to
	// that much more), LowerQuotaShare and UpperQuotaShare what that is
	// against a shard's write quota.
	SplitAt         *lineage.HashKey `json:"splitAt,omitempty"`
	LowerShare      float64          `json:"lowerShare,omitempty"`
	UpperShare      float64          `json:"upperShare,omitempty"`
	LowerQuotaShare float64          `json:"lowerQuotaShare,omitempty"`
	UpperQuotaShare float64          `json:"upperQuotaShare,omitempty"`
	// PartitionKey (one-key) is the key, KeyRate its rate in the
	// measure, and KeyQuotaShare that rate against a shard's quota.
	PartitionKey  string  `json:"partitionKey,omitempty"`
	KeyRate       float64 `json:"keyRate,omitempty"`
	KeyQuotaShare float64 `json:"keyQuotaShare,omitempty"`
}

// Analyze reports on each shard's window, in the order given. The report's
// window is the first shard's (ReadWindows gives them all the same).
func Analyze(stream string, windows []ShardWindow, o HotOptions) *HotReport {
	o.defaults()
	r := &HotReport{Stream: stream, Shards: make([]ShardTraffic, 0, len(windows))}
	for i := range windows {
		w := &windows[i]
		if i == 0 {
			r.WindowStart, r.WindowEnd = w.From.UTC(), w.Until.UTC()
		}
		st := AnalyzeShard(w, o)
		r.Sampled = r.Sampled || st.Sampled
		r.Shards = append(r.Shards, st)
	}
	return r
}

// keyTally is one partition key's weighted traffic.
type keyTally struct {
	key            string
	records, bytes float64
}

// AnalyzeShard reports on one shard's window.
func AnalyzeShard(w *ShardWindow, o HotOptions) ShardTraffic {
	o.defaults()
	st := ShardTraffic{ShardID: w.ShardID, Sampled: w.Sampled, SampledShare: w.SampledShare(), RecordsRead: len(w.Records),
		Seconds: w.Covered.Seconds(), Stopped: w.Stopped, TopKeys: []KeyShare{}}
	var records, bytes float64
	tally := map[string]*keyTally{}
	for _, rec := range w.Records {
		records += rec.Weight
		bytes += rec.Weight * float64(rec.Bytes)
		k := tally[rec.PartitionKey]
		if k == nil {
			k = &keyTally{key: rec.PartitionKey}
			tally[rec.PartitionKey] = k
		}
		k.records += rec.Weight
		k.bytes += rec.Weight * float64(rec.Bytes)
	}
	st.Records, st.Bytes = int64(math.Round(records)), int64(math.Round(bytes))
	if secs := st.Seconds; secs > 0 {
		st.RecordsPerSecond, st.BytesPerSecond = records/secs, bytes/secs
	}
	byRecords, byBytes := st.RecordsPerSecond/WriteRecordsPerSecond, st.BytesPerSecond/WriteBytesPerSecond
	st.WriteQuotaShare, st.WriteQuotaBy = byBytes, ByBytes
	if byRecords > byBytes {
		st.WriteQuotaShare, st.WriteQuotaBy = byRecords, ByRecords
	}
	keys := make([]*keyTally, 0, len(tally))
	for _, k := range tally {
		keys = append(keys, k)
	}
	measure := func(k *keyTally) float64 {
		if st.WriteQuotaBy == ByRecords {
			return k.records
		}
		return k.bytes
	}
	slices.SortFunc(keys, func(a, b *keyTally) int {
		return cmp.Or(cmp.Compare(measure(b), measure(a)), cmp.Compare(a.key, b.key))
	})
	total := records
	if st.WriteQuotaBy == ByBytes {
		total = bytes
	}
	for _, k := range keys[:min(o.Top, len(keys))] {
		st.TopKeys = append(st.TopKeys, KeyShare{PartitionKey: k.key, Records: int64(math.Round(k.records)), Bytes: int64(math.Round(k.bytes)),
			Share: ratio(measure(k), total), RecordShare: ratio(k.records, records), ByteShare: ratio(k.bytes, bytes)})
	}
	st.OutsideRange = outside(w)
	if out := outsideTraffic(w, st.WriteQuotaBy); out > 0 {
		st.ExplicitShare = ratio(out, total)
	}
	if st.Sampled && len(w.Slices) > 0 {
		lo, hi, read := sampleBounds(w)
		if est := w.Estimated; est > 0 {
			st.WriteQuotaLow, st.WriteQuotaHigh = st.WriteQuotaShare*lo/est, st.WriteQuotaShare*hi/est
		}
		st.ReadTimeShare = ratio(read, w.Covered.Seconds())
	}
	st.Verdict = verdict(w, &st, o)
	return st
}

// outsideTraffic is the traffic (in measure m) of the records whose hash
// lies outside the shard.
func outsideTraffic(w *ShardWindow, m Measure) float64 {
	t := 0.0
	for _, r := range w.Records {
		if !w.Range.Contains(r.Hash()) {
			if m == ByBytes {
				t += r.Weight * float64(r.Bytes)
			} else {
				t += r.Weight
			}
		}
	}
	return t
}

// sampleBounds bounds the number of records a sampled window holds from
// the spread of its slices' rates: each cut slice's records stand for its
// whole slice at the rate seen from its start to its cut, so slices that
// disagree (bursts that one slice caught and the next did not) widen the
// bounds. Estimate ± two standard errors, never below the records read
// (and the exact slices); with a single cut slice, a factor of two either
// way. read is the seconds of the window the records read come from.
func sampleBounds(w *ShardWindow) (lo, hi, read float64) {
	var exact, est, secs2 float64
	var rates []float64
	for _, s := range w.Slices {
		read += s.ReadSeconds
		if !s.Cut {
			exact += s.Records
			continue
		}
		exact += float64(s.Read)
		est += s.Records
		if s.Seconds > 0 {
			rates = append(rates, s.Records/s.Seconds)
			secs2 += s.Seconds * s.Seconds
		}
	}
	total := w.Estimated
	if len(rates) < 2 {
		// One cut slice: nothing to measure its spread by. Within a
		// factor of two either way, and never below what was read.
		return max(exact, total/2), total * 2, read
	}
	mean := 0.0
	for _, r := range rates {
		mean += r
	}
	mean /= float64(len(rates))
	v := 0.0
	for _, r := range rates {
		v += (r - mean) * (r - mean)
	}
	v /= float64(len(rates) - 1)
	se := math.Sqrt(v * secs2)
	return max(exact, total-2*se), total + 2*se, read
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func outside(w *ShardWindow) int {
	n := 0
	for _, r := range w.Records {
		if !w.Range.Contains(r.Hash()) {
			n++
		}
	}
	return n
}

// verdict diagnoses a shard from its figures.
func verdict(w *ShardWindow, st *ShardTraffic, o HotOptions) Verdict {
	quota := fmt.Sprintf("%s of its write quota (%s)", PercentText(st.WriteQuotaShare), quotaText(st.WriteQuotaBy))
	bounded := st.WriteQuotaHigh > 0
	if bounded && st.WriteQuotaHigh > st.WriteQuotaLow {
		quota += fmt.Sprintf(" by the sample, between %s and %s", PercentText(st.WriteQuotaLow), PercentText(st.WriteQuotaHigh))
	}
	switch {
	case len(st.TopKeys) == 0:
		return Verdict{Kind: VerdictCold, Text: "cold: " + quota}
	case bounded && st.WriteQuotaLow < o.HotShare && st.WriteQuotaHigh >= o.HotShare:
		return Verdict{Kind: VerdictUncertain, Text: fmt.Sprintf("uncertain: %s; the sample is too thin to tell (%s read, from %s of the window's time): read more with --max-records, or a shorter window",
			quota, plural(st.RecordsRead, "record"), PercentText(st.ReadTimeShare))}
	case st.WriteQuotaShare < o.HotShare:
		return Verdict{Kind: VerdictCold, Text: "cold: " + quota}
	}
	top := st.TopKeys[0]
	keyQuota := max(float64(top.Records)/st.Seconds/WriteRecordsPerSecond, float64(top.Bytes)/st.Seconds/WriteBytesPerSecond)
	if st.Seconds <= 0 {
		keyQuota = 0
	}
	if keyQuota > 1 {
		return oneKey(st, top)
	}
	if st.ExplicitShare >= 0.5 {
		return Verdict{Kind: VerdictExplicit, Text: fmt.Sprintf("explicit hash keys: %s of its traffic was written with explicit hash keys, whose place in the shard's range GetRecords does not return, so no split point can be read from it; the producer's ExplicitHashKey values would tell where to split", PercentText(st.ExplicitShare))}
	}
	k, lower, ok := splitPoint(w, st.WriteQuotaBy)
	if !ok {
		return oneKey(st, top) // every record in range has one hash
	}
	known := 1 - st.ExplicitShare
	v := Verdict{Kind: VerdictManyKeys, SplitAt: &k, LowerShare: lower * known, UpperShare: (1 - lower) * known}
	v.LowerQuotaShare, v.UpperQuotaShare = st.WriteQuotaShare*v.LowerShare, st.WriteQuotaShare*v.UpperShare
	if top.Share > o.OneKeyShare && max(v.LowerQuotaShare, v.UpperQuotaShare) > (1-minSplitGain)*st.WriteQuotaShare {
		// The key is nearly all of it: the best split leaves it where it
		// was, with the shard's load on one child.
		return oneKey(st, top)
	}
	lead := "many keys: "
	if top.Share > o.OneKeyShare {
		lead = fmt.Sprintf("one key, %s, is %s of its traffic but writes %s of a shard's quota by itself: ", quoteKey(top.PartitionKey), PercentText(top.Share), PercentText(keyQuota))
	}
	v.Text = fmt.Sprintf("%ssplitting at hash %s would put %s / %s of its traffic on each child: %s and %s of a shard's write quota",
		lead, k, PercentText(v.LowerShare), PercentText(v.UpperShare), PercentText(v.LowerQuotaShare), PercentText(v.UpperQuotaShare))
	if st.ExplicitShare > 0 {
		v.Text += fmt.Sprintf(", with %s of its traffic (written with explicit hash keys, whose place GetRecords does not return) on either side: the producer's ExplicitHashKey values would tell", PercentText(st.ExplicitShare))
	}
	if max(v.LowerQuotaShare, v.UpperQuotaShare) > 1 {
		v.Text += "; a child stays over its quota: split it again, or scale"
	}
	return v
}

func oneKey(st *ShardTraffic, top KeyShare) Verdict {
	v := Verdict{Kind: VerdictOneKey, PartitionKey: top.PartitionKey}
	if st.WriteQuotaBy == ByRecords {
		v.KeyRate = st.RecordsPerSecond * top.Share
		v.KeyQuotaShare = v.KeyRate / WriteRecordsPerSecond
		v.Text = fmt.Sprintf("one key: %s is %s of this shard's records; splitting cannot spread one key (it writes %s records/s, %s of a shard's 1,000 records/s)",
			quoteKey(top.PartitionKey), PercentText(top.Share), strconv.FormatFloat(v.KeyRate, 'f', 0, 64), PercentText(v.KeyQuotaShare))
		return v
	}
	v.KeyRate = st.BytesPerSecond * top.Share
	v.KeyQuotaShare = v.KeyRate / WriteBytesPerSecond
	v.Text = fmt.Sprintf("one key: %s is %s of this shard's bytes; splitting cannot spread one key (it writes %s/s, %s of a shard's 1 MiB/s)",
		quoteKey(top.PartitionKey), PercentText(top.Share), byteSize(v.KeyRate), PercentText(v.KeyQuotaShare))
	return v
}

// splitPoint is the hash key, between two neighbouring hashes and legal for
// SplitShard, that puts nearest half of the shard's in-range traffic (in
// measure m) below it, and the share below.
func splitPoint(w *ShardWindow, m Measure) (lineage.HashKey, float64, bool) {
	type point struct {
		h lineage.HashKey
		t float64
	}
	var ps []point
	for _, r := range w.Records {
		h := r.Hash()
		if !w.Range.Contains(h) {
			continue
		}
		t := r.Weight
		if m == ByBytes {
			t *= float64(r.Bytes)
		}
		ps = append(ps, point{h, t})
	}
	slices.SortFunc(ps, func(a, b point) int { return a.h.Cmp(b.h) })
	if len(ps) < 2 || ps[0].h == ps[len(ps)-1].h || w.Range.Width().BitLen() < 3 {
		return lineage.HashKey{}, 0, false
	}
	hs := make([]lineage.HashKey, len(ps))
	cum := make([]float64, len(ps)+1)
	for i, p := range ps {
		hs[i] = p.h
		cum[i+1] = cum[i] + p.t
	}
	c := cutNear(hs, cum, cum[len(ps)]/2)
	lo, hi := legalSplitRange(w.Range)
	k := minKey(maxKey(gapKey(hs[c-1], hs[c]), lo), hi)
	// The share below k (the clamp can move it off the cut).
	i, _ := slices.BinarySearchFunc(hs, k, lineage.HashKey.Cmp)
	return k, ratio(cum[i], cum[len(ps)]), true
}

// PercentText prints a share as a whole percentage ("51 %"), with one decimal
// below 10 % ("2.5 %"), and "< 0.1 %" below that, so small shares do not
// read as 0.
func PercentText(f float64) string {
	p := f * 100
	if p > 0 && p < 0.05 {
		return "< 0.1 %"
	}
	if p < 10 && p > 0 {
		return strconv.FormatFloat(p, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + " %"
}

func quotaText(m Measure) string {
	if m == ByRecords {
		return "1,000 records/s"
	}
	return "1 MiB/s"
}

// byteSize prints a rate's bytes: 850 KiB, 1.2 MiB, 300 B.
func byteSize(b float64) string {
	switch {
	case b >= 1<<20:
		return strconv.FormatFloat(b/(1<<20), 'f', 1, 64) + " MiB"
	case b >= 1<<10:
		return strconv.FormatFloat(b/(1<<10), 'f', 0, 64) + " KiB"
	}
	return strconv.FormatFloat(b, 'f', 0, 64) + " B"
}
