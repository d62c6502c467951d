package cmd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

func TestMain(m *testing.M) {
	code := emulator.Main(m, emulator.Options{})
	if binPath != "" && binErr == nil {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// cliResult is what one run of the command line produced.
type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs the command line in-process against an endpoint (normally the
// package's emulator), with our own retryer and client options but static
// test credentials and no config loader. Only a command that builds a
// client needs the emulator: without one, the test is skipped there; a
// command line refused by validation runs without it.
func runCLI(t *testing.T, endpoint, stdin string, args ...string) cliResult {
	t.Helper()
	return runCLIAt(t, endpoint, nil, stdin, args...)
}

// runCLIWith is runCLI with a hook that adjusts the factory (other clients).
func runCLIWith(t *testing.T, customize func(*Factory), stdin string, args ...string) cliResult {
	t.Helper()
	return runCLIAt(t, "", customize, stdin, args...)
}

func runCLIAt(t *testing.T, endpoint string, customize func(*Factory), stdin string, args ...string) cliResult {
	t.Helper()
	ios, in, out, errOut := TestIO()
	in.WriteString(stdin)
	f := NewFactory(ios)
	f.KinesisClient = func(ctx context.Context, region string) (*kinesis.Client, error) {
		e := emulator.Require(t)
		if endpoint == "" {
			endpoint = e.Endpoint
		}
		o := e.ClientOptions()
		if region == "" {
			region = o.Region
		}
		cfg := aws.Config{Region: region, Credentials: o.Credentials, HTTPClient: o.HTTPClient, Retryer: awscall.KinesisRetryer}
		cc := clientConfig{EndpointURL: endpoint}
		if f.Global.Debug {
			cc.Debug = f.debug()
		}
		return newKinesisClient(cfg, cc), nil
	}
	if customize != nil {
		customize(f)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, f, args)
	return cliResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds kinesis-shards once per test run.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kinesis-shards-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "kinesis-shards")
		root, _ := emulator.RepoRoot()
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("go build: %v\n%s", binErr, binPath)
	}
	return binPath
}

// runBinary runs the real binary with env (nil = the emulator's Env).
func runBinary(t *testing.T, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	bin := binary(t)
	if env == nil {
		env = emulator.Require(t).Env()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = bytes.NewBufferString(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return cliResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

// shellQuote quotes s for sh/bash (shared by the completion and tmux tests).
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
