package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

func main() {
	bin := flag.String("bin", "bin/kinesis-shards", "the kinesis-shards binary")
	keep := flag.Bool("keep", false, "leave the emulator running (prints how to use it, stops on Ctrl-C)")
	flag.Parse()
	if err := run(*bin, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(bin string, keep bool) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Println("# starting kinesis-mock (state changes take 2s, so UPDATING shows)")
	e, err := emulator.Start(ctx, emulator.Options{StateDuration: 2 * time.Second, AccountID: "000000000000"})
	if err != nil {
		return err
	}
	defer e.Stop()
	state, err := os.MkdirTemp("", "kinesis-shards-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	env := append(e.Env(), "XDG_STATE_HOME="+state, "NO_COLOR=")
	fmt.Printf("# kinesis-mock at %s; AWS_ENDPOINT_URL_KINESIS points there\n\n", e.Endpoint)

	d := &demo{bin: bin, env: env}
	d.step("", "create", "demo", "--shards", "2")
	d.step(orders(1000), "put", "demo", "--key-field", "user")
	d.step("", "streams")
	d.step("", "tree", "demo")
	d.step("", "split", "demo", "0", "--yes")
	d.step(orders(500), "put", "demo", "--key-field", "user")
	d.step("", "merge", "demo", "3", "1", "--yes")
	d.step(orders(500), "put", "demo", "--key-field", "user")
	d.step("", "tree", "demo")
	d.step("", "tree", "demo", "--key", "user-7")
	d.step("", "tail", "demo", "--key", "user-7", "--idle-exit", "2s", "--format", "text", "--no-checkpoint", "--max-records", "12")
	d.step("", "tail", "demo", "--idle-exit", "2s", "--max-records", "5")
	// The same key's records pushed through an enhanced fan-out consumer,
	// registered for the run and deregistered at its end: its first 20
	// (the first shard on its path), then the split's child.
	d.step("", "tail", "demo", "--efo", "--key", "user-7", "--idle-exit", "2s", "--format", "text", "--no-checkpoint", "--max-records", "24")
	d.step("", "scale", "demo", "--to", "4", "--dry-run")
	if _, err := exec.LookPath("dot"); err == nil {
		d.pipe("tree demo -o dot | dot -Tsvg", []string{"tree", "demo", "-o", "dot"}, "dot", "-Tsvg", "-o", filepath.Join(os.TempDir(), "kinesis-shards-demo.svg"))
	}
	if d.failed > 0 {
		return fmt.Errorf("%d step(s) failed", d.failed)
	}
	if keep {
		fmt.Printf("\n# the emulator keeps running; in another shell:\n#   export %s\n#   export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=x AWS_REGION=us-east-1\n#   %s dashboard demo\n# Ctrl-C here stops it.\n",
			"AWS_ENDPOINT_URL_KINESIS="+e.Endpoint, e.AccessKeyID(), bin)
		<-ctx.Done()
	}
	fmt.Println("\n# demo done; stopping kinesis-mock")
	return nil
}

type demo struct {
	bin    string
	env    []string
	failed int
}

func (d *demo) step(stdin string, args ...string) {
	shown := "kinesis-shards " + strings.Join(args, " ")
	if stdin != "" {
		shown = fmt.Sprintf("(%d JSON lines) | %s", strings.Count(stdin, "\n"), shown)
	}
	fmt.Printf("$ %s\n", shown)
	cmd := exec.Command(d.bin, args...)
	cmd.Env = d.env
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	if err := cmd.Run(); err != nil {
		fmt.Printf("# step failed: %v\n", err)
		d.failed++
	}
	fmt.Println()
}

func (d *demo) pipe(shown string, args []string, next ...string) {
	fmt.Printf("$ kinesis-shards %s\n", shown)
	a := exec.Command(d.bin, args...)
	a.Env = d.env
	b := exec.Command(next[0], next[1:]...)
	r, w := io.Pipe()
	a.Stdout, b.Stdin = w, r
	b.Stdout, b.Stderr, a.Stderr = os.Stdout, os.Stdout, os.Stdout
	if err := b.Start(); err != nil {
		fmt.Printf("# step failed: %v\n", err)
		d.failed++
		return
	}
	errA := a.Run()
	w.Close()
	errB := b.Wait()
	if errA != nil || errB != nil {
		fmt.Printf("# step failed: %v %v\n", errA, errB)
		d.failed++
		return
	}
	fmt.Printf("# wrote %s\n\n", next[len(next)-1])
}

// orders makes n JSON lines keyed by user.
func orders(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"user\":\"user-%d\",\"order\":%d,\"amount\":%d.%02d}\n", i%50, i, 10+i%90, i%100)
	}
	return b.String()
}
