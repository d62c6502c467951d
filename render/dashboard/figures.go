package dashboard

import (
	"strconv"
	"time"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// figures turns the sampling reader's polls into per-shard rates over a
// sliding window. It is fed and read from Update only (no locking).
type figures struct {
	window time.Duration
	since  time.Time // when the current reader started; zero when none
	shards map[string]*shardFigures
}

type shardFigures struct {
	polls  []tail.PollStats // within the window, oldest first
	behind int64
	last   time.Time
	total  int64
}

func newFigures(window time.Duration) *figures {
	return &figures{window: window, shards: map[string]*shardFigures{}}
}

// reset forgets everything (a new reader, another stream).
func (f *figures) reset(since time.Time) {
	f.since = since
	f.shards = map[string]*shardFigures{}
}

// add records one GetRecords answer, received at now.
func (f *figures) add(p tail.PollStats, now time.Time) {
	s := f.shards[p.ShardID]
	if s == nil {
		s = &shardFigures{}
		f.shards[p.ShardID] = s
	}
	p.At = now
	s.polls = append(s.polls, p)
	s.behind, s.last = p.MillisBehind, now
	s.total += int64(p.Records)
	f.expire(s, now)
}

func (f *figures) expire(s *shardFigures, now time.Time) {
	cut := now.Add(-f.window)
	i := 0
	for i < len(s.polls) && !s.polls[i].At.After(cut) {
		i++
	}
	if i > 0 {
		s.polls = append(s.polls[:0], s.polls[i:]...)
	}
}

// rate is records/s and bytes/s into the shard over the window (or since
// the reader started, if that is shorter); ok is false before the shard's
// first poll.
func (f *figures) rate(id string, now time.Time) (recs, bytes float64, ok bool) {
	s := f.shards[id]
	if s == nil || f.since.IsZero() {
		return 0, 0, false
	}
	f.expire(s, now)
	span := f.window
	if d := now.Sub(f.since); d < span {
		span = d
	}
	if span < time.Second {
		span = time.Second
	}
	var r, b int
	for _, p := range s.polls {
		r += p.Records
		b += p.Bytes
	}
	return float64(r) / span.Seconds(), float64(b) / span.Seconds(), true
}

// behind is the reader's MillisBehindLatest on the shard at its last poll.
func (f *figures) behind(id string) (time.Duration, bool) {
	s := f.shards[id]
	if s == nil {
		return 0, false
	}
	return time.Duration(s.behind) * time.Millisecond, true
}

// formatRate prints records per second: "0", "0.4", "12", "1.2k".
func formatRate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v/1000, 'f', 1, 64) + "k"
}
