package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// figures is the file phase's section of docs/RELIABILITY.md.
func figures(st stats, seed uint64, duration time.Duration, rate int, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Last soak run: %s, seed %d, %s of writes at %d records/s against kinesis-mock (took %s).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), seed, duration, rate, took.Round(time.Second))
	fmt.Fprintf(&b, "| figure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| records written | %d |\n", st.written)
	achieved := 0.0
	if st.writeTime > 0 {
		achieved = float64(st.written) / st.writeTime.Seconds()
	}
	fmt.Fprintf(&b, "| write rate | %.2f records/s achieved (%d in %s), %d requested |\n", achieved, st.written, st.writeTime.Round(time.Second), rate)
	fmt.Fprintf(&b, "| lines printed (all runs) | %d |\n| replayed after restarts | %d |\n", st.delivered, st.replays)
	fmt.Fprintf(&b, "| replay bound (checkpoint window) | after a kill -9: lines printed in its last %s + %d; after a Ctrl-C: 0 (checkpoint interval %s) |\n",
		checkpointInterval+replayGrace, replaySlack, checkpointInterval)
	fmt.Fprintf(&b, "| largest replay after one restart | %d of at most %d (run %d, after a %s) |\n",
		max(st.maxReplay, 0), st.maxReplayBound, st.maxReplayRun, st.maxReplayAfter)
	fmt.Fprintf(&b, "| tail runs | %d (%d kill -9, %d Ctrl-C, %d final drain) |\n", st.restarts+1, st.kills, st.interrupts, st.statuses[expectedStatus[stopDrain]])
	statuses := slices.Sorted(maps.Keys(st.statuses))
	var ss []string
	for _, k := range statuses {
		ss = append(ss, fmt.Sprintf("%s %d", k, st.statuses[k]))
	}
	fmt.Fprintf(&b, "| tail exit statuses (observed) | %s |\n", strings.Join(ss, ", "))
	fmt.Fprintf(&b, "| reshards | %d splits, %d merges |\n", st.splits, st.merges)
	fmt.Fprintf(&b, "| most GetRecords on one shard in any second | %d |\n", st.maxCallsPerSecond)
	keys := make([]string, 0, len(st.fired))
	for k := range st.fired {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var f []string
	for _, k := range keys {
		f = append(f, fmt.Sprintf("%s %d", k, st.fired[k]))
	}
	fmt.Fprintf(&b, "| faults injected | %s |\n", strings.Join(f, ", "))
	fmt.Fprintf(&b, "| result | every record delivered, each key in order in every run, every run ended as stopped, replays within the checkpoint window |\n")
	return b.String()
}

func writeReport(path, text string) error { return writeSection(path, beginMark, endMark, text) }

// writeSection replaces what stands between the markers in the file.
func writeSection(path, beginMark, endMark, text string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s … %s section", path, beginMark, endMark)
	}
	s = s[:i+len(beginMark)] + "\n" + text + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

const (
	beginMark      = "<!-- soak:begin -->"
	endMark        = "<!-- soak:end -->"
	leaseBeginMark = "<!-- soak-leases:begin -->"
	leaseEndMark   = "<!-- soak-leases:end -->"
)
