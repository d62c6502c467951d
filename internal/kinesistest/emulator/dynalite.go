package emulator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kinesis-shards/kinesis-shards/internal/fake/dynamo"
)

// Dynalite is a local DynamoDB for the lease-table tests, on a loopback
// port. By default it is internal/fake/dynamo's wire handler served by the
// test binary itself (PID 0, no log): nothing to install, nothing to
// start. With KINESIS_SHARDS_TEST_DYNAMO=dynalite it is the npm package
// dynalite, pinned beside the Kinesis emulators and run with node, to
// check the fake against another implementation. Either way tables are
// created and deleted at once and data lives in memory.
type Dynalite struct {
	Endpoint string
	PID      int
	LogPath  string

	dir  string
	cmd  *exec.Cmd
	srv  *http.Server  // in process
	done chan struct{} // closed when dynalite exited or the server stopped
	once sync.Once
}

// dynamoEnv is the variable that picks the DynamoDB: "dynalite" for the
// node one, unset for the in-process fake.
const dynamoEnv = "KINESIS_SHARDS_TEST_DYNAMO"

// StartDynalite starts the DynamoDB that KINESIS_SHARDS_TEST_DYNAMO picks
// on a free loopback port and returns once it answers.
func StartDynalite(ctx context.Context) (*Dynalite, error) {
	switch v := os.Getenv(dynamoEnv); v {
	case "":
		return serveDynamo()
	case "dynalite":
		return startNodeDynalite(ctx)
	default:
		return nil, fmt.Errorf("emulator: %s=%q: want dynalite, or unset for the in-process fake", dynamoEnv, v)
	}
}

// DynamoAvailable reports whether the DynamoDB KINESIS_SHARDS_TEST_DYNAMO
// picks can run here: always for the in-process fake; node and
// node_modules for dynalite.
func DynamoAvailable() error {
	if os.Getenv(dynamoEnv) == "dynalite" {
		return Available(Kinesalite) // same requirements: node and node_modules
	}
	return nil
}

// serveDynamo serves a new, empty fake DynamoDB. It answers as soon as
// the listener exists, so there is nothing to wait for.
func serveDynamo() (*Dynalite, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("emulator: serve the fake DynamoDB: %w", err)
	}
	d := &Dynalite{
		Endpoint: "http://" + ln.Addr().String(),
		srv:      &http.Server{Handler: dynamo.New().Handler(), ReadHeaderTimeout: 10 * time.Second},
		done:     make(chan struct{}),
	}
	go func() {
		_ = d.srv.Serve(ln) // ErrServerClosed after Stop
		close(d.done)
	}()
	return d, nil
}

// startNodeDynalite starts dynalite on a free loopback port and waits
// until it answers ListTables.
func startNodeDynalite(ctx context.Context) (*Dynalite, error) {
	if err := Available(Kinesalite); err != nil { // same requirements: node and node_modules
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	pkg := filepath.Join(root, "testdata", "emulator", "node_modules", "dynalite")
	if _, err := os.Stat(pkg); err != nil {
		return nil, fmt.Errorf("dynalite is not installed in %s: run make emulator", pkg)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kinesis-shards-dynalite-")
	if err != nil {
		return nil, err
	}
	d := &Dynalite{Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), dir: dir, LogPath: filepath.Join(dir, "dynalite.log"), done: make(chan struct{})}
	log, err := os.Create(d.LogPath)
	if err != nil {
		return nil, err
	}
	const script = `const [dir, port] = process.argv.slice(1);
const server = require(dir)({createTableMs: 0, deleteTableMs: 0, updateTableMs: 0});
server.on('error', (err) => { console.error(err); process.exit(1); });
server.listen(+port, '127.0.0.1', () => console.log('dynalite listening on 127.0.0.1:' + port));`
	d.cmd = exec.Command("node", "-e", script, pkg, strconv.Itoa(port))
	d.cmd.Stdout, d.cmd.Stderr = log, log
	d.cmd.SysProcAttr = sysProcAttr()
	err = d.cmd.Start()
	log.Close()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("emulator: start dynalite: %w", err)
	}
	d.PID = d.cmd.Process.Pid
	go func() { d.cmd.Wait(); close(d.done) }()

	probe := dynamodb.New(d.ClientOptions(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		select {
		case <-d.done:
			b, _ := os.ReadFile(d.LogPath)
			d.Stop()
			return nil, fmt.Errorf("emulator: dynalite exited: %s", b)
		case <-ctx.Done():
			d.Stop()
			return nil, errors.New("emulator: dynalite did not answer within 30s")
		case <-time.After(probeEvery):
		}
		pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
		_, err := probe.ListTables(pctx, &dynamodb.ListTablesInput{})
		pcancel()
		if err == nil {
			return d, nil
		}
	}
}

// ClientOptions are DynamoDB client options for it (no config loader,
// static test credentials).
func (d *Dynalite) ClientOptions() dynamodb.Options {
	return dynamodb.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("kinesisshards", secretKey, ""),
		BaseEndpoint: aws.String(d.Endpoint),
		HTTPClient:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
	}
}

// Client returns a DynamoDB client for it.
func (d *Dynalite) Client(t testing.TB, opts ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	return dynamodb.New(d.ClientOptions(), opts...)
}

// Env is the environment that points the real binary's DynamoDB client at
// it (on top of the Kinesis emulator's Env).
func (d *Dynalite) Env() []string {
	return []string{"AWS_ENDPOINT_URL_DYNAMODB=" + d.Endpoint}
}

// Stop ends it, cutting open connections; idempotent.
func (d *Dynalite) Stop() {
	d.once.Do(func() {
		if d.srv != nil {
			_ = d.srv.Close()
			<-d.done
		}
		if d.cmd != nil && d.cmd.Process != nil {
			d.cmd.Process.Signal(os.Interrupt)
			select {
			case <-d.done:
			case <-time.After(stopGrace):
				d.cmd.Process.Kill()
				<-d.done
			}
		}
		os.RemoveAll(d.dir)
	})
}
