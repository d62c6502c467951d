package dashboard

import (
	"context"
	"strings"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/render"
	"github.com/kinesis-shards/kinesis-shards/reshard"
	"github.com/kinesis-shards/kinesis-shards/tail"
)

// Options configure the dashboard. Zero durations take their defaults.
type Options struct {
	// Backend makes every call; it is required.
	Backend Backend
	// Stream is the stream to open; a zero Ref starts with the picker.
	Stream kstream.Ref
	// ReadOnly hides every action (--read-only).
	ReadOnly bool
	// Theme gives every colour; render.NewTheme(false) draws plain text.
	Theme render.Theme
	// Checkpoint is a tail checkpoint file whose positions the table shows
	// (--checkpoint), read with Backend.ReadCheckpoint; "" shows no
	// checkpoint column.
	Checkpoint string
	// LeaseOverlay lays the KCL lease table Backend.Leases reads over the
	// tree at every listing (--kcl-table).
	LeaseOverlay bool
	// Lag adds the LAG column, read with Backend.Lag at every listing
	// (--checkpoint, --lease-table or --kcl-table).
	Lag bool
	// DescribeError words an error for the status line (cmd passes the
	// wording the commands use); nil uses err.Error().
	DescribeError func(error) string

	// Now is the clock of the figures and the header; nil means time.Now.
	Now func() time.Time
	// Location is the time zone of displayed times; nil means time.Local.
	Location *time.Location

	RefreshInterval time.Duration // the listing is refreshed this often (5s)
	FigureInterval  time.Duration // figures are recomputed this often (1s)
	PollInterval    time.Duration // the sampling reader's poll of a caught-up shard (tail's default, 1s)
	Window          time.Duration // figures are averaged over this window (10s)
	CallTimeout     time.Duration // deadline of a listing (30s)

	// NoReader starts no sampling reader (tests, golden screens): records
	// and polls then come only from messages sent by the caller.
	NoReader bool
	// Paused starts with the sampling reader paused (--paused): no
	// GetRecords call until p is pressed.
	Paused bool
	// Wait tunes the wait for ACTIVE after a split or merge.
	Wait kstream.WaitOptions
	// Sample bounds the traffic sample of a balanced split.
	Sample reshard.SampleOptions
	// Context ends every call when done; nil means context.Background.
	Context context.Context
}

func (o *Options) defaults() {
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 5 * time.Second
	}
	if o.FigureInterval <= 0 {
		o.FigureInterval = time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = tail.DefaultPollInterval
	}
	if o.Window <= 0 {
		o.Window = 10 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.DescribeError == nil {
		o.DescribeError = func(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
}
