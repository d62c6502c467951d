package render

import (
	"strings"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// LeaseMark is a lease table's view of one shard (tree --kcl-table): who
// holds it, where its checkpoint is, and whether it blocks or is blocked.
type LeaseMark struct {
	Lease      bool   // a lease row exists
	Owner      string // "" = nobody
	Checkpoint string // a sequence number or TRIM_HORIZON, LATEST, AT_TIMESTAMP, SHARD_END
	ShardEnd   bool
	Blocked    bool     // a child whose parent lease is not SHARD_END
	BlockedBy  []string // those parents
	Blocking   []string // children this unfinished parent holds back
	Reason     string   // one sentence
}

// Marks of the lease column.
const (
	markBlocked  = "⛔"
	markBlocking = "⚠"
)

// leaseText is the LEASE cell: the blocked/blocking mark and reason first,
// then the owner and checkpoint.
func leaseText(m *LeaseMark, short bool) string {
	if m == nil {
		return ""
	}
	var parts []string
	switch {
	case m.Blocked:
		parts = append(parts, markBlocked+" BLOCKED by "+joinIDs(m.BlockedBy, short, ", "))
	case len(m.Blocking) > 0:
		parts = append(parts, markBlocking+" BLOCKS "+joinIDs(m.Blocking, short, ", "))
	}
	switch {
	case !m.Lease:
		parts = append(parts, "no lease")
	case m.ShardEnd:
		parts = append(parts, "SHARD_END")
	default:
		owner := m.Owner
		if owner == "" {
			owner = "unowned"
		}
		parts = append(parts, owner+" @ "+shortCheckpoint(m.Checkpoint))
	}
	return strings.Join(parts, " · ")
}

// shortCheckpoint keeps sentinels and the tail of a sequence number.
func shortCheckpoint(cp string) string {
	switch {
	case cp == "":
		return "-"
	case len(cp) > 12 && cp[0] >= '0' && cp[0] <= '9':
		return "…" + cp[len(cp)-8:]
	}
	return cp
}

// leaseJSON is a shard's "lease" object in `tree -o json --kcl-table`.
type leaseJSON struct {
	Owner      string   `json:"owner,omitempty"`
	Checkpoint string   `json:"checkpoint,omitempty"`
	ShardEnd   bool     `json:"shardEnd"`
	Blocked    bool     `json:"blocked"`
	BlockedBy  []string `json:"blockedBy,omitempty"`
	Blocking   []string `json:"blocking,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	NoLease    bool     `json:"noLease,omitempty"`
}

func toLeaseJSON(m *LeaseMark) *leaseJSON {
	if m == nil {
		return nil
	}
	return &leaseJSON{Owner: m.Owner, Checkpoint: m.Checkpoint, ShardEnd: m.ShardEnd, Blocked: m.Blocked,
		BlockedBy: m.BlockedBy, Blocking: m.Blocking, Reason: m.Reason, NoLease: !m.Lease}
}

// leaseShown reports whether a lineage has a lease overlay.
func (l *Lineage) leaseMark(s *lineage.Shard) *LeaseMark {
	if l.Leases == nil {
		return nil
	}
	return l.Leases[s.ID]
}
