package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/wirestub"
)

// Enhanced fan-out next to polling: the CPU a tail --efo spends per MiB it
// delivers, against the fanout stub in a child process ("bench fanout
// ..."), next to a polling tail against the GetRecords stub in the same
// run; put-to-print latency is in runLatency.

// fanoutMain is the fanout stub's child process: shards prefilled with
// records of the GetRecords stub's kind, served until stdin closes.
func fanoutMain(args []string) error {
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	shards := fs.Int("shards", 1, "open shards")
	size := fs.Int("size", 1024, "payload bytes per record")
	records := fs.Int("records", 1000, "records per shard")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ids := make([]string, *shards)
	for i := range ids {
		ids[i] = fmt.Sprintf("shardId-%012d", i)
	}
	s, err := fanout.StartStub(fanout.StubOptions{Stream: "bench", Shards: ids, CreatingPolls: -1, DeletingPolls: -1})
	if err != nil {
		return err
	}
	recs := make([]fanout.Record, *records)
	for i := range recs {
		recs[i] = fanout.Record{PartitionKey: fmt.Sprintf("pk-%06d", i%1000000), Data: wirestub.TextPayload(i, *size)}
	}
	for _, id := range ids {
		s.Put(id, recs...)
	}
	fmt.Println(s.URL)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
	}
	fmt.Printf("stats events=%d subscriptions=%d\n", s.Stats().Events, s.Stats().Subscriptions)
	s.Close()
	return nil
}

// efoCost is what one drain of the fanout stub cost.
type efoCost struct {
	mibPerCPUs, cpuBusy, wallMiBs float64
	window                        time.Duration
}

// measureEFOCost drains shards × records records of size bytes with
// `tail bench --efo --no-checkpoint --format F` on core 0 (GOMAXPROCS=1),
// the stub on core 1, and measures from the tenth to the ninetieth
// hundredth of the records: past the subscriptions' start, before the
// shards run dry one by one.
func measureEFOCost(ctx context.Context, c *config, size, shards, records int, format string) (efoCost, error) {
	stub, err := startStub(ctx, 1, "fanout", "-shards", strconv.Itoa(shards), "-size", strconv.Itoa(size), "-records", strconv.Itoa(records))
	if err != nil {
		return efoCost{}, err
	}
	defer stub.stop()
	env := toolEnv(c, stub.URL, "x", "GOMAXPROCS=1")
	ch, err := startChild([]string{c.bin, "tail", "bench", "--efo", "--no-checkpoint", "--format", format}, env, 0, nil)
	if err != nil {
		return efoCost{}, err
	}
	defer ch.stop(10 * time.Second)
	total := int64(shards * records)
	from, to := total/10, total*9/10
	var s0, s1 tputSample
	deadline := time.Now().Add(3 * time.Minute)
	for s1.lines < to {
		st, err := readProc(ch.pid())
		if err != nil {
			return efoCost{}, fmt.Errorf("tail exited: %v\n%s", err, tailOf(ch.stderrText(), 1500))
		}
		s := tputSample{st, ch.out.lines.Load(), ch.out.bytes.Load()}
		if s0.lines < from {
			s0 = s
		}
		s1 = s
		if time.Now().After(deadline) {
			return efoCost{}, fmt.Errorf("tail printed %d of %d records in 3 minutes\n%s", s1.lines, total, tailOf(ch.stderrText(), 1500))
		}
		if err := awscall.Sleep(ctx, sampleEvery); err != nil {
			return efoCost{}, err
		}
	}
	r := tputFrom(shards, size, s0, s1, 0)
	return efoCost{mibPerCPUs: r.mibPerCPUs, cpuBusy: r.cpuBusy, wallMiBs: r.wallMiBs, window: r.window}, nil
}

func runEFOCost(ctx context.Context, c *config, rep *report) error {
	const size, shards = 1024, 50
	records := 4000 // per shard: 50 × 4,000 × 1 KiB ≈ 197 MiB
	if c.quick {
		records = 1000
	}
	runs := min(c.count, 3)
	var poll, sub, subBusy, subRate sample
	for i := range runs {
		c.log("efo cost: polling, %d shards, run %d/%d", shards, i+1, runs)
		cycle := pacingCycle(size)
		window, _ := wholeCycles(cycle, 8*time.Second)
		p, err := measureTail(ctx, c, size, "json", false, shards, max(5*time.Second, cycle), window, cycle)
		if err != nil {
			return err
		}
		poll = append(poll, p.mibPerCPUs)
		c.log("efo cost: --efo, %d shards × %d records, run %d/%d", shards, records, i+1, runs)
		e, err := measureEFOCost(ctx, c, size, shards, records, "json")
		if err != nil {
			return err
		}
		c.log("efo cost: %.0f MiB/CPU-s polling, %.0f MiB/CPU-s --efo (core %.0f %% busy, %.1f MiB/s over %s)",
			p.mibPerCPUs, e.mibPerCPUs, 100*e.cpuBusy, e.wallMiBs, e.window.Round(time.Millisecond))
		sub, subBusy, subRate = append(sub, e.mibPerCPUs), append(subBusy, e.cpuBusy), append(subRate, e.wallMiBs)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The CPU one core spends per MiB a tail delivers (payload + key; 1 KiB JSON-looking records, `--format json`, %d shards), "+
		"polling next to subscribed, in the same run. Both are the real binary pinned to core 0 with GOMAXPROCS=1 and their stub on core 1. "+
		"**Polling**: `tail bench --no-checkpoint` against the GetRecords stub, every shard behind for ever, measured as in the throughput section "+
		"(burst start to burst start). **--efo**: `tail bench --efo --no-checkpoint` against the fanout stub (internal/kinesistest/fanout, in a "+
		"child process), every shard prefilled with %s records and served as SubscribeToShard events of 1,000 records, as fast as the tail reads "+
		"them (the stub does not hold a subscription to 2 MiB/s), measured from the tenth to the ninetieth hundredth of the records "+
		"(past the consumer's registration and the subscriptions' start, before the shards run dry); CPU from /proc/PID/stat. Median of %d runs (min–max).\n\n",
		shards, num(float64(records)), runs)
	b.WriteString("| Reader | MiB / CPU-s | ⇒ shards at 2 MiB/s per core | Core busy | Delivered MiB/s |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| polling (GetRecords) | %s | %s | (see the throughput section) | (paced at 2 MiB/s per shard) |\n", poll.cell(), scale(poll, 0.5).cell())
	fmt.Fprintf(&b, "| `--efo` (SubscribeToShard) | %s | %s | %s | %s |\n", sub.cell(), scale(sub, 0.5).cell(), pctCell(subBusy), subRate.cell())
	fmt.Fprintf(&b, "\nA subscribed tail decodes each event with the SDK's event stream reader and its generic JSON decoder (base64 data in "+
		"JSON), where the polling tail decodes GetRecords pages with a decoder of its own (tail/internal/getrecords) that reads the body "+
		"once; that, not the network, is the difference. Either way one core serves %s shards read at the full 2 MiB/s "+
		"(polling) or %s (--efo), far more than a person tails at once.\n", num(poll.median()/2), num(sub.median()/2))
	rep.add(45, "CPU per MiB: --efo next to polling", b.String())
	return nil
}

// putToPrint measures put-to-print latency on kinesis-mock with a polling
// tail and with a tail --efo through the fanout shim, on the same
// emulator, one after the other.
func putToPrint(ctx context.Context, c *config, e *emulator.Emulator, k *kinesis.Client, rep *report) error {
	rate, dur := 20, 30*time.Second
	if c.quick {
		dur = 8 * time.Second
	}
	shim, err := fanout.StartShim(e.Endpoint, fanout.ShimOptions{})
	if err != nil {
		return err
	}
	defer shim.Close()
	readers := []struct {
		name, endpoint string
		extra          []string
	}{{"polling", "", nil}, {"`--efo`", shim.URL, []string{"--efo"}}}
	nruns := max(1, min(c.count, 2))
	var rows strings.Builder
	var p50s []string
	perReader := 0
	for _, r := range readers {
		var all, allAck []float64
		var runs sample
		for i := range nruns {
			c.log("put-to-print latency, %s, run %d (%d records/s for %s)", r.name, i+1, rate, dur)
			p, a, err := measurePutToPrint(ctx, c, e, k, rate, dur, r.endpoint, r.extra...)
			if err != nil {
				return err
			}
			all, allAck = append(all, p...), append(allAck, a...)
			runs = append(runs, percentile(p, 50))
		}
		perReader = len(all)
		for _, row := range []struct {
			what string
			v    []float64
		}{{"put sent → printed", all}, {"put acknowledged → printed", allAck}} {
			fmt.Fprintf(&rows, "| %s | %s | %s | %s | %s | %s |\n", r.name, row.what, num(percentile(row.v, 50)), num(percentile(row.v, 90)), num(percentile(row.v, 99)), num(percentile(row.v, 100)))
		}
		p50s = append(p50s, fmt.Sprintf("%s %s ms", r.name, runs.cell()))
	}
	var lb strings.Builder
	fmt.Fprintf(&lb, "kinesis-mock, a 4-shard stream, the real binary: `tail STREAM --format json` polling at the default --poll-interval 1s, then "+
		"`tail STREAM --efo` through the fanout shim (internal/kinesistest/fanout, which adds the event the SDK reads first), on the same emulator. "+
		"A producer here calls PutRecord %d times a second on random keys for %s with its send time in the payload; latency is the time the line "+
		"arrives here minus the send time (and minus the PutRecord acknowledgement). %d records a reader over %d run(s), percentiles of all of them.\n\n",
		rate, dur, perReader, nruns)
	lb.WriteString("| Reader | | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) |\n|---|---|---|---|---|---|\n")
	lb.WriteString(rows.String())
	fmt.Fprintf(&lb, "\nPolling: a record waits for its shard's next poll, up to --poll-interval after an empty one but 220 ms after one that "+
		"returned records (with records arriving on every shard several times a second, most polls do), plus a GetRecords call "+
		"(kinesis-mock: tens of ms). `--efo`: kinesis-mock pushes nothing as it arrives: each subscription gets one event a second with "+
		"whatever arrived since, so a record waits for its shard's next tick, uniformly up to a second, and the figure is that tick "+
		"(median about half a second), not the tool's. On AWS an event goes out as records arrive (about 70 ms from put to read, by "+
		"AWS's account), so there `--efo` is the faster one, and the poll interval no longer bounds the latency. p50 per run: %s.\n", strings.Join(p50s, "; "))
	rep.add(55, "Put-to-print latency (kinesis-mock)", lb.String())
	return nil
}
