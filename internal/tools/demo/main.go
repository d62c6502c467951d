package main

import (
	"bufio"
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
	emu := flag.String("emulator", "local", "the Kinesis to run against: local (kinesis-shards local, needs only Go) or kinesis-mock (node)")
	flag.Parse()
	if *emu != "local" && *emu != "kinesis-mock" {
		fmt.Fprintf(os.Stderr, "demo: -emulator %q: use local or kinesis-mock\n", *emu)
		os.Exit(2)
	}
	if err := run(*bin, *emu, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(bin, emu string, keep bool) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var env []string
	if emu == "local" {
		fmt.Println("# starting kinesis-shards local (state changes take 2s, so UPDATING shows)")
		l, err := startLocal(ctx, bin)
		if err != nil {
			return err
		}
		defer l.stop()
		env = l.env
	} else {
		fmt.Println("# starting kinesis-mock (state changes take 2s, so UPDATING shows)")
		e, err := emulator.Start(ctx, emulator.Options{StateDuration: 2 * time.Second, AccountID: "000000000000"})
		if err != nil {
			return err
		}
		defer e.Stop()
		env = e.Env()
	}
	state, err := os.MkdirTemp("", "kinesis-shards-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	env = append(env, "XDG_STATE_HOME="+state, "NO_COLOR=")
	fmt.Printf("# %s at %s; AWS_ENDPOINT_URL_KINESIS points there\n\n", emu, endpointOf(env))

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
		fmt.Printf("\n# the emulator keeps running; in another shell:\n")
		for _, kv := range env {
			if strings.HasPrefix(kv, "AWS_ENDPOINT_URL_KINESIS=") || strings.HasPrefix(kv, "AWS_ACCESS_KEY_ID=") || strings.HasPrefix(kv, "AWS_SECRET_ACCESS_KEY=") || strings.HasPrefix(kv, "AWS_REGION=") {
				fmt.Printf("#   export %s\n", kv)
			}
		}
		fmt.Printf("#   %s dashboard demo\n# Ctrl-C here stops it.\n", bin)
		<-ctx.Done()
	}
	fmt.Printf("\n# demo done; stopping %s\n", emu)
	return nil
}

// endpointOf is the AWS_ENDPOINT_URL_KINESIS of env.
func endpointOf(env []string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "AWS_ENDPOINT_URL_KINESIS="); ok {
			return v
		}
	}
	return ""
}

// local is a `kinesis-shards local` process.
type local struct {
	cmd *exec.Cmd
	env []string
}

// startLocal starts `kinesis-shards local` on a free port and reads the
// export lines it prints: the environment of every step (with no other
// AWS_ variable of the caller's, and no shared config).
func startLocal(ctx context.Context, bin string) (*local, error) {
	cmd := exec.CommandContext(ctx, bin, "local", "--port", "0", "--state-delay", "2s")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l := &local{cmd: cmd}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(strings.ToUpper(kv), "AWS_") {
			l.env = append(l.env, kv)
		}
	}
	l.env = append(l.env, "AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
	sc := bufio.NewScanner(out)
	for n := 0; n < 4 && sc.Scan(); n++ {
		kv, ok := strings.CutPrefix(sc.Text(), "export ")
		if !ok {
			l.stop()
			return nil, fmt.Errorf("kinesis-shards local printed %q, not an export line", sc.Text())
		}
		l.env = append(l.env, kv)
	}
	if endpointOf(l.env) == "" {
		l.stop()
		return nil, fmt.Errorf("kinesis-shards local printed no AWS_ENDPOINT_URL_KINESIS (%v)", sc.Err())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return l, nil
}

// stop ends the process as Ctrl-C would, and waits for it.
func (l *local) stop() {
	_ = l.cmd.Process.Signal(os.Interrupt)
	_ = l.cmd.Wait()
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
