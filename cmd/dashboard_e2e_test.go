package cmd

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// tmuxScreen drives the real binary in a private tmux server: a 120x40
// window, keys with send-keys, the screen with capture-pane.
type tmuxScreen struct {
	t      *testing.T
	socket string
	target string
}

func (s *tmuxScreen) tmux(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tmux", append([]string{"-S", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxScreen) capture() string {
	s.t.Helper()
	out, err := s.tmux("capture-pane", "-p", "-t", s.target)
	if err != nil {
		s.t.Fatalf("tmux capture-pane: %v: %s", err, out)
	}
	return out
}

// send types tmux key names (Enter, Tab, Down) or plain letters.
func (s *tmuxScreen) send(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		if out, err := s.tmux("send-keys", "-t", s.target, k); err != nil {
			s.t.Fatalf("tmux send-keys %s: %v: %s", k, err, out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFor polls the screen until every text is on it.
func (s *tmuxScreen) waitFor(timeout time.Duration, texts ...string) string {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	var screen string
	for {
		screen = s.capture()
		missing := ""
		for _, text := range texts {
			if !strings.Contains(screen, text) {
				missing = text
				break
			}
		}
		if missing == "" {
			return screen
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the screen does not show %q after %s:\n%s", missing, timeout, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDashboardEndToEnd opens a stream that has been split in the real
// binary under tmux against kinesis-mock, checks that every shard is drawn,
// splits one from the dashboard after the preview and the confirmation,
// sees the children appear, and quits with q.
func TestDashboardEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if emulator.InCI() {
			t.Fatal("tmux is not installed (CI needs it for this test)")
		}
		t.Skip("tmux is not installed")
	}
	e := emulator.Require(t)
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 2)

	// History: shard 1 split at the middle of its listed range into 2 and 3.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ls, err := c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	var mid string
	for _, s := range ls.Shards {
		if aws.ToString(s.ShardId) == "shardId-000000000001" {
			a, _ := new(big.Int).SetString(aws.ToString(s.HashKeyRange.StartingHashKey), 10)
			b, _ := new(big.Int).SetString(aws.ToString(s.HashKeyRange.EndingHashKey), 10)
			mid = new(big.Int).Rsh(new(big.Int).Add(a, b), 1).String()
		}
	}
	if _, err := c.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String(name), ShardToSplit: aws.String("shardId-000000000001"), NewStartingHashKey: aws.String(mid)}); err != nil {
		t.Fatal(err)
	}
	e.WaitActive(t, c, name)
	// A few records for the live pane.
	var recs []emulator.Rec
	for i := range 20 {
		recs = append(recs, emulator.Rec{PartitionKey: fmt.Sprintf("customer-%d", i), Data: []byte(fmt.Sprintf(`{"order":%d}`, i))})
	}
	e.Put(t, c, name, recs)

	// The binary runs under a shell script that records its exit code.
	bin := binary(t)
	dir := t.TempDir()
	exitFile := filepath.Join(dir, "exit")
	var script strings.Builder
	script.WriteString("#!/bin/sh\n")
	for _, kv := range e.Env() {
		if strings.HasPrefix(kv, "AWS_") {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&script, "export %s=%s\n", k, dashQuote(v))
		}
	}
	fmt.Fprintf(&script, "export TERM=xterm-256color\nunset NO_COLOR\n%s dashboard %s --refresh 1s\necho $? > %s\nsleep 60\n",
		dashQuote(bin), dashQuote(name), dashQuote(exitFile))
	scriptPath := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	s := &tmuxScreen{t: t, socket: filepath.Join(dir, "tmux.sock"), target: "dash"}
	if out, err := s.tmux("new-session", "-d", "-s", "dash", "-x", "120", "-y", "40", scriptPath); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { s.tmux("kill-server") })

	// Every shard of the split stream, and the live figures.
	screen := s.waitFor(30*time.Second, name, "ACTIVE", "3 open / 4 shards", "split into 2 + 3", "REC/S")
	for _, line := range []string{"● 0", "○ 1", "● 2", "● 3"} {
		if !strings.Contains(screen, line) {
			t.Fatalf("the tree lacks %q:\n%s", line, screen)
		}
	}

	// Select shard 2 (tree order 0, 1, 2, 3) and split it at the middle.
	s.send("Down", "Down")
	s.waitFor(10*time.Second, "shard shardId-000000000002 open")
	s.send("s")
	s.waitFor(10*time.Second, "Split shard 2", "at the middle")
	s.send("Enter")
	s.waitFor(10*time.Second, "split shardId-000000000002 at 50% of its range", "Before (3 open shards):", "After (4 open shards):",
		"SplitShard ShardToSplit=shardId-000000000002 NewStartingHashKey=", "Send 1 call to stream "+name+"? [y/N]")
	s.send("y")
	screen = s.waitFor(30*time.Second, "split 2 into 4 and 5; the stream is ACTIVE", "4 open / 6 shards", "split into 4 + 5")
	for _, line := range []string{"● 4", "● 5", "○ 2"} {
		if !strings.Contains(screen, line) {
			t.Fatalf("the new tree lacks %q:\n%s", line, screen)
		}
	}
	out, err := c.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Shards) != 6 {
		t.Fatalf("the stream has %d shards after the split, want 6", len(out.Shards))
	}

	// q quits with exit 0.
	s.send("q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(exitFile)
		if err == nil && strings.TrimSpace(string(b)) != "" {
			if code := strings.TrimSpace(string(b)); code != "0" {
				t.Fatalf("exit code %s after q", code)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard did not exit after q:\n%s", s.capture())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func dashQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
