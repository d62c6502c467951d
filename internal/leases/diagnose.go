package leases

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// StreamID says which stream's leases to read from a multi-stream table,
// whose lease keys are account:streamName:creationEpoch:shardId.
type StreamID struct {
	Name    string
	Account string    // "" = any
	Created time.Time // zero = any
}

// ShardLease is the lease view of one shard.
type ShardLease struct {
	ShardID    string
	Lease      *Lease // nil: no lease row
	Finished   bool   // SHARD_END
	Blocked    bool   // a child whose parent lease is not at SHARD_END
	BlockedBy  []string
	Blocking   []string // children this unfinished parent holds back
	Reason     string   // one sentence: why blocked, or what blocks
	NoLease    bool     // the shard has no lease while its parents are done
	Unassigned bool     // a lease without an owner
}

// Diagnosis is a KCL application's lease table laid over the lineage.
type Diagnosis struct {
	Shards map[string]*ShardLease
	// Leases of the stream for shards the listing no longer has (trimmed,
	// or stale rows).
	Orphans []Lease
	// Rows of other streams (multi-stream tables) that were skipped.
	OtherStreams int
}

// Diagnose lays the leases over the graph, the way the KCL decides: a
// child shard is processed only once every parent lease is SHARD_END or
// absent. A child whose parent lease exists and is not SHARD_END is
// blocked, and the parent is marked as what blocks it, with its owner and
// checkpoint: the answer to "why is my consumer stuck after a reshard?".
func Diagnose(g *lineage.Graph, all []Lease, stream StreamID) *Diagnosis {
	d := &Diagnosis{Shards: map[string]*ShardLease{}}
	byShard := map[string]*Lease{}
	for i := range all {
		l := &all[i]
		if l.Stream != "" && !sameStream(l.Stream, stream) {
			d.OtherStreams++
			continue
		}
		byShard[l.ShardID] = l
	}
	for _, s := range g.Shards() {
		sl := &ShardLease{ShardID: s.ID, Lease: byShard[s.ID]}
		if sl.Lease != nil {
			sl.Finished = sl.Lease.Finished()
			sl.Unassigned = sl.Lease.Owner == "" && !sl.Finished
		}
		d.Shards[s.ID] = sl
	}
	for _, s := range g.Shards() {
		sl := d.Shards[s.ID]
		if sl.Finished || s.State == lineage.StateTrimmed {
			continue
		}
		var blockers []string
		for _, p := range s.Parents {
			pl := byShard[p]
			if pl != nil && !pl.Finished() {
				blockers = append(blockers, p)
				ps := d.Shards[p]
				if ps != nil {
					ps.Blocking = append(ps.Blocking, s.ID)
				}
			}
		}
		switch {
		case len(blockers) > 0:
			sl.Blocked, sl.BlockedBy = true, blockers
			var why []string
			for _, p := range blockers {
				why = append(why, fmt.Sprintf("parent %s (at %s, not SHARD_END)", lineage.ShortID(p), describeLease(byShard[p])))
			}
			sl.Reason = "waits for " + strings.Join(why, " and ")
		case sl.Lease == nil && s.State != lineage.StateTrimmed:
			sl.NoLease = true
			sl.Reason = "no lease yet: the KCL creates it at its next shard sync (every 60 s) or when a parent reaches SHARD_END"
		}
	}
	for _, s := range g.Shards() {
		sl := d.Shards[s.ID]
		if len(sl.Blocking) > 0 {
			sort.Strings(sl.Blocking)
			var kids []string
			for _, c := range sl.Blocking {
				kids = append(kids, lineage.ShortID(c))
			}
			sl.Reason = fmt.Sprintf("blocks %s: at %s, not SHARD_END", strings.Join(kids, ", "), describeLease(sl.Lease))
		}
	}
	for id, l := range byShard {
		if g.Shard(id) == nil {
			d.Orphans = append(d.Orphans, *l)
		}
	}
	sort.Slice(d.Orphans, func(i, j int) bool { return d.Orphans[i].ShardID < d.Orphans[j].ShardID })
	return d
}

// describeLease: "TRIM_HORIZON, owner worker-2" / "sequence 4959…, no owner".
func describeLease(l *Lease) string {
	if l == nil {
		return "no lease"
	}
	cp := l.Checkpoint
	switch {
	case cp == "":
		cp = "no checkpoint"
	case len(cp) > 20 && cp[0] >= '0' && cp[0] <= '9':
		cp = "sequence …" + cp[len(cp)-8:]
	}
	owner := "no owner"
	if l.Owner != "" {
		owner = "owner " + l.Owner
	}
	return cp + ", " + owner
}

// sameStream matches a multi-stream lease's account:streamName:epoch.
func sameStream(s string, id StreamID) bool {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return false
	}
	if parts[1] != id.Name {
		return false
	}
	if id.Account != "" && parts[0] != id.Account {
		return false
	}
	if !id.Created.IsZero() {
		epoch, err := strconv.ParseInt(parts[2], 10, 64)
		if err != nil || epoch != id.Created.Unix() {
			return false
		}
	}
	return true
}
