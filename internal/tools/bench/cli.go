package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// The binary next to the AWS CLI (`aws kinesis ...`, a new Python process
// per call, as a shell loop runs it) on the same emulator and stream.

func awsArgs(e *emulator.Emulator, args ...string) []string {
	argv := append(append([]string{"aws", "kinesis"}, args...), "--endpoint-url", e.Endpoint, "--region", "us-east-1", "--output", "json")
	if awsCLIv2() {
		argv = append(argv, "--no-cli-pager") // v1 has no pager, nor the flag
	}
	return argv
}

var awsCLIv2 = sync.OnceValue(func() bool {
	out, _ := exec.Command("aws", "--version").CombinedOutput()
	return strings.HasPrefix(string(out), "aws-cli/2")
})

func runCLIComparisons(ctx context.Context, c *config, rep *report) error {
	if _, err := exec.LookPath("aws"); err != nil {
		return fmt.Errorf("the AWS CLI (aws) is not on PATH: install it (pip install awscli) to compare with it")
	}
	var errs []string
	if err := compareListing(ctx, c, rep); err != nil {
		errs = append(errs, "streams/tree: "+err.Error())
	}
	if err := comparePutAndDrain(ctx, c, rep); err != nil {
		errs = append(errs, "put/drain: "+err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// timeRuns runs each command count times, interleaved, and returns the
// wall times in ms.
func timeRuns(ctx context.Context, count int, cmds []func() error) ([]sample, error) {
	out := make([]sample, len(cmds))
	for range count {
		for i, run := range cmds {
			t0 := time.Now()
			if err := run(); err != nil {
				return nil, err
			}
			out[i] = append(out[i], time.Since(t0).Seconds()*1000)
		}
	}
	return out, nil
}

func command(ctx context.Context, env []string, argv ...string) func() error {
	return func() error {
		_, _, err := runTimed(ctx, argv, env, nil)
		return err
	}
}

// cliListShards lists every shard with the AWS CLI a page per call: its
// own paginator sends StreamName with NextToken, which the service refuses
// (docs/KINESIS-NOTES.md §4), so a script has to loop on --next-token itself.
func cliListShards(ctx context.Context, e *emulator.Emulator, env []string, name string) func() error {
	return func() error {
		args := []string{"list-shards", "--stream-name", name, "--no-paginate"}
		for {
			_, out, err := runTimed(ctx, awsArgs(e, args...), env, nil)
			if err != nil {
				return err
			}
			var page struct{ NextToken string }
			if err := json.Unmarshal(out, &page); err != nil {
				return err
			}
			if page.NextToken == "" {
				return nil
			}
			args = []string{"list-shards", "--next-token", page.NextToken, "--no-paginate"}
		}
	}
}

func compareListing(ctx context.Context, c *config, rep *report) error {
	e, k, err := startEmulator(ctx, c, emulator.KinesisMock)
	if err != nil {
		return err
	}
	defer e.Stop()
	env := toolEnv(c, e.Endpoint, e.AccessKeyID())
	var b strings.Builder
	b.WriteString("kinesis-mock; wall time of each command from exec to exit (the AWS CLI is a Python program started per call; " +
		"kinesis-shards a static binary), runs interleaved, median of " + strconv.Itoa(max(3, c.count)) + " runs (min–max). `streams` lists the account's streams with a DescribeStreamSummary each " +
		"(here the two below); `tree` lists the shards (kinesis-mock pages hold ≤ 100 shards) and renders the lineage; `aws kinesis list-shards` " +
		"runs once per page with --next-token (its own paginator repeats --stream-name with the token, which the service refuses).\n\n" +
		"| Stream | `kinesis-shards streams` (ms) | `aws kinesis list-streams` (ms) | `kinesis-shards tree` (ms) | `aws kinesis list-shards` (ms) |\n|---|---|---|---|---|\n")
	for _, st := range []struct {
		label  string
		shards int
		splits int
	}{{"4 shards, 1 split and 1 merge (7 in the lineage)", 4, 1}, {"300 shards, 1 split (302)", 300, 1}} {
		name := streamName("list")
		c.log("listing: %s", st.label)
		if err := createStream(ctx, k, name, st.shards); err != nil {
			return err
		}
		defer deleteStream(k, name)
		if _, err := k.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(name), ShardToSplit: aws.String("shardId-000000000000"),
			NewStartingHashKey: aws.String("1000")}); err != nil {
			return err
		}
		if err := waitActive(ctx, k, name); err != nil {
			return err
		}
		if st.shards == 4 {
			// Merge the split's lower child with... its upper sibling.
			n := strconv.Itoa(st.shards)
			lower, upper := "shardId-00000000000"+n, "shardId-00000000000"+strconv.Itoa(st.shards+1)
			if _, err := k.MergeShards(ctx, &kinesis.MergeShardsInput{StreamName: aws.String(name), ShardToMerge: aws.String(lower), AdjacentShardToMerge: aws.String(upper)}); err != nil {
				return err
			}
			if err := waitActive(ctx, k, name); err != nil {
				return err
			}
		}
		runs, err := timeRuns(ctx, max(3, c.count), []func() error{
			command(ctx, env, c.bin, "streams"),
			command(ctx, env, awsArgs(e, "list-streams")...),
			command(ctx, env, c.bin, "tree", name),
			cliListShards(ctx, e, env, name),
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", st.label, runs[0].cell(), runs[1].cell(), runs[2].cell(), runs[3].cell())
	}
	rep.add(70, "`streams` and `tree` next to the AWS CLI (kinesis-mock)", b.String())
	return nil
}

// comparePutAndDrain runs put and a drain of a prefilled stream next to
// the AWS CLI, on one kinesalite.
func comparePutAndDrain(ctx context.Context, c *config, rep *report) error {
	e, k, err := startEmulator(ctx, c, emulator.Kinesalite)
	if err != nil {
		return err
	}
	defer e.Stop()
	env := toolEnv(c, e.Endpoint, e.AccessKeyID())
	if err := comparePut(ctx, c, rep, e, k, env); err != nil {
		return err
	}
	return compareDrain(ctx, c, rep, e, k, env)
}

// comparePut times put against a loop of `aws kinesis put-records`.
func comparePut(ctx context.Context, c *config, rep *report, e *emulator.Emulator, k *kinesis.Client, env []string) error {
	// put: lines of 100 bytes on stdin; the CLI gets the same records in
	// put-records calls of 500 (its maximum), one process per call.
	const size = 100
	n, cliBatches := 20000, 10
	if c.quick {
		n, cliBatches = 5000, 4
	}
	lines := make([]byte, 0, n*(size+1))
	for i := range n {
		l := fmt.Sprintf(`{"n":%d,"user":"u-%04d","msg":"`, i, rand.IntN(10000))
		l += strings.Repeat("x", size-len(l)-2) + `"}`
		lines = append(append(lines, l...), '\n')
	}
	var oursRate, cliRate sample
	for i := range max(3, c.count) {
		name := streamName("put")
		if err := createStream(ctx, k, name, 4); err != nil {
			return err
		}
		c.log("put: kinesis-shards put, %d records, run %d", n, i+1)
		d, _, err := runTimed(ctx, []string{c.bin, "put", name}, env, bytes.NewReader(lines))
		if err != nil {
			return err
		}
		oursRate = append(oursRate, float64(n)/d.Seconds())
		deleteStream(k, name)
	}
	dir := filepath.Join(c.tmp, "cli")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := range max(2, min(c.count, 3)) {
		name := streamName("put")
		if err := createStream(ctx, k, name, 4); err != nil {
			return err
		}
		c.log("put: aws kinesis put-records × %d, run %d", cliBatches, i+1)
		t0 := time.Now()
		for j := range cliBatches {
			var recs []map[string]string
			for _, l := range bytes.Split(lines[j*500*(size+1):(j+1)*500*(size+1)], []byte{'\n'}) {
				if len(l) > 0 {
					recs = append(recs, map[string]string{"Data": string(l), "PartitionKey": fmt.Sprintf("k%d", rand.IntN(1<<30))})
				}
			}
			f := filepath.Join(dir, fmt.Sprintf("batch%d.json", j))
			bj, _ := json.Marshal(recs)
			if err := os.WriteFile(f, bj, 0o644); err != nil {
				return err
			}
			if _, _, err := runTimed(ctx, awsArgs(e, "put-records", "--stream-name", name, "--records", "file://"+f), env, nil); err != nil {
				return err
			}
		}
		cliRate = append(cliRate, float64(cliBatches*500)/time.Since(t0).Seconds())
		deleteStream(k, name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kinesalite; a 4-shard stream per run. `kinesis-shards put STREAM < lines` writes %s lines of %d bytes (random keys; batches "+
		"of up to 500, one PutRecords call at a time); the AWS CLI writes %d × 500 of the same records with `aws kinesis put-records --records file://batch.json` "+
		"in a loop (the JSON files are written beforehand, outside the timing). Records per second of wall time, whole process runs included; "+
		"median of %d runs of ours and %d of the CLI loop (min–max).\n\n",
		group(strconv.Itoa(n)), size, cliBatches, len(oursRate), len(cliRate))
	b.WriteString("| Writer | Records/s | vs the AWS CLI |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| `kinesis-shards put` | %s | %s× |\n| `aws kinesis put-records` loop | %s | 1× |\n", oursRate.cell(), num(oursRate.median()/cliRate.median()), cliRate.cell())
	rep.add(80, "`put` next to the AWS CLI (kinesalite)", b.String())
	rep.target(target{What: "`put` throughput vs an AWS CLI put-records loop (kinesalite)", Goal: "≥ 10×",
		Measured: fmt.Sprintf("%s records/s vs %s: %s×", num(oursRate.median()), num(cliRate.median()), num(oursRate.median()/cliRate.median())),
		Met:      oursRate.median() >= 10*cliRate.median()})
	return nil
}

// compareDrain reads a prefilled stream to its end, in two layouts of the
// same records (a few deep shards, more shallow ones), with tail and with
// a loop of `aws kinesis get-records`.
func compareDrain(ctx context.Context, c *config, rep *report, e *emulator.Emulator, k *kinesis.Client, env []string) error {
	const size = 100
	total := 100000
	if c.quick {
		total = 20000
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kinesalite; a stream prefilled with %s records of %d bytes, read from the start to the end. "+
		"`kinesis-shards tail STREAM --no-checkpoint --format json --max-records N` (it exits at the last record; stdout a pipe read here; "+
		"it reads every shard at once, each at the 2 MiB/s read quota, so a 1 MiB page of these records is followed by 0.5 s) against a shell-style loop of "+
		"`aws kinesis get-shard-iterator` then `aws kinesis get-records` per shard, one shard after the other, until a page is empty with MillisBehindLatest 0 "+
		"(one process per call, default Limit 10,000, no pacing). Records per second of wall time, process start included. "+
		"The layout decides the ratio: tail's time is about one read-quota pause per page of the deepest shard, the loop's is two or more "+
		"Python starts per shard.\n\n", group(strconv.Itoa(total)), size)
	b.WriteString("| Stream | `kinesis-shards tail` (records/s) | `aws kinesis get-records` loop (records/s) | tail vs the CLI |\n|---|---|---|---|\n")
	for _, shards := range []int{4, 16} {
		ours, cli, err := drain(ctx, c, e, k, env, shards, total, size)
		if err != nil {
			return err
		}
		label := fmt.Sprintf("%d shards × %s records (median of %d and %d runs)", shards, group(strconv.Itoa(total/shards)), len(ours), len(cli))
		fmt.Fprintf(&b, "| %s | %s | %s | %s× |\n", label, ours.cell(), cli.cell(), num(ours.median()/cli.median()))
		ratio := ours.median() / cli.median()
		t := target{What: fmt.Sprintf("draining a prefilled %d-shard stream: `tail` vs an AWS CLI get-records loop (kinesalite)", shards), Goal: "≥ 10×",
			Measured: fmt.Sprintf("%s records/s vs %s: %s×", num(ours.median()), num(cli.median()), num(ratio)),
			Met:      ratio >= 10}
		if !t.Met {
			t.Why = fmt.Sprintf("tail keeps each shard's 2 MiB/s read quota (a 0.5 s pause after each 1 MiB page), which the loop ignores; with %s records "+
				"a shard, tail's time is those pauses, not its CPU; more shards for the same records raise the ratio (next row)", group(strconv.Itoa(total/shards)))
		}
		rep.target(t)
	}
	rep.add(85, "Draining a stream next to the AWS CLI (kinesalite)", b.String())
	return nil
}

// drain prefills a stream and reads it with tail and with the CLI loop.
func drain(ctx context.Context, c *config, e *emulator.Emulator, k *kinesis.Client, env []string, nShards, total, size int) (ours, cli sample, err error) {
	name := streamName("drain")
	if err := createStream(ctx, k, name, nShards); err != nil {
		return nil, nil, err
	}
	defer deleteStream(k, name)
	c.log("drain: prefilling %d records on %d shards", total, nShards)
	if err := putBatches(ctx, k, name, total, size); err != nil {
		return nil, nil, err
	}
	shards, err := listShards(ctx, k, name)
	if err != nil {
		return nil, nil, err
	}
	for i := range max(3, c.count) {
		c.log("drain: kinesis-shards tail, %d shards, run %d", nShards, i+1)
		ch, err := startChild([]string{c.bin, "tail", name, "--no-checkpoint", "--format", "json", "--max-records", strconv.Itoa(total)}, env, -1, nil)
		if err != nil {
			return nil, nil, err
		}
		if err := ch.wait(ctx, 5*time.Minute); err != nil {
			return nil, nil, err
		}
		if got := ch.out.lines.Load(); got != int64(total) {
			return nil, nil, fmt.Errorf("tail printed %d records, want %d", got, total)
		}
		ours = append(ours, float64(total)/time.Since(ch.start).Seconds())
	}
	for i := range max(1, min(c.count, 2)) {
		c.log("drain: aws kinesis get-records loop, %d shards, run %d", nShards, i+1)
		t0 := time.Now()
		got := 0
		for _, sh := range shards {
			_, out, err := runTimed(ctx, awsArgs(e, "get-shard-iterator", "--stream-name", name, "--shard-id", aws.ToString(sh.ShardId), "--shard-iterator-type", "TRIM_HORIZON"), env, nil)
			if err != nil {
				return nil, nil, err
			}
			var it struct{ ShardIterator string }
			if err := json.Unmarshal(out, &it); err != nil {
				return nil, nil, err
			}
			for iter := it.ShardIterator; iter != ""; {
				_, out, err := runTimed(ctx, awsArgs(e, "get-records", "--shard-iterator", iter), env, nil)
				if err != nil {
					return nil, nil, err
				}
				var page struct {
					Records            []json.RawMessage
					NextShardIterator  string
					MillisBehindLatest int64
				}
				if err := json.Unmarshal(out, &page); err != nil {
					return nil, nil, err
				}
				got += len(page.Records)
				if len(page.Records) == 0 && page.MillisBehindLatest == 0 {
					break // caught up
				}
				iter = page.NextShardIterator
			}
		}
		if got != total {
			return nil, nil, fmt.Errorf("the CLI loop read %d records, want %d", got, total)
		}
		cli = append(cli, float64(total)/time.Since(t0).Seconds())
	}
	return ours, cli, nil
}
