// Package tail reads a whole stream in an order that keeps every partition
// key's records in order across splits and merges: a shard is read only once
// each of its parents has been read to its end (SHARD_END in the checkpoint
// store) or has been trimmed away.
//
// It owns the scheduler (scheduler.go: the event loop, one method per
// event), the shard bookkeeping (shards.go: listings, which shard may be
// read, what each reader delivered), the per-shard readers and their pacing
// (reader.go, budget.go; efo.go is the other kind of reader, subscribed
// through enhanced fan-out, with the same conversion, delivery and
// positions), the conversion of a page into delivered records
// (convert.go: KPL de-aggregation, kpl.go, and CloudWatch Logs batches,
// cwlogs.go), the checkpoint store (the local file is the first
// implementation), and the synchronisation with a lease table shared by
// several tails (leases.go declares what a table must do, leasesync.go
// keeps the tail in step with it). It never prints: records leave through
// a callback, and checkpoints follow what the caller acknowledges as
// written. A caller's Options.Select picks and shapes the records before
// they are counted (tail --filter, --jq); what it drops counts as read.
// tail/internal/getrecords decodes GetRecords responses.
//
// Imports: lineage, tail/internal/getrecords, internal/efo (the subscribed
// reader), internal/kstream, internal/awscall, internal/awsdebug, internal/awserr,
// internal/text, the SDK, protowire and the standard library.
package tail
