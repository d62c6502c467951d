package emulator

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Backend names an emulator.
type Backend string

// The emulators the harness can start (docs/KINESIS-NOTES.md §10).
const (
	Fake        Backend = "fake"         // internal/fake, in the test process: the default, needs only Go
	KinesisMock Backend = "kinesis-mock" // npm kinesis-local: the parity suite and opt-in runs
	Kinesalite  Backend = "kinesalite"   // npm kinesalite: the parity suite, opt-in runs, benchmarks
	Moto        Backend = "moto"         // moto_server: smoke tests only, when on PATH
)

// Backends lists every known backend, the default first.
var Backends = []Backend{Fake, KinesisMock, Kinesalite, Moto}

// Caps is what a backend can do, so tests can skip what it cannot. The values
// follow the quirks table of docs/KINESIS-NOTES.md §10.
type Caps struct {
	// TimedStates: CREATING, UPDATING and DELETING last Options.StateDuration,
	// and calls made while UPDATING fail with ResourceInUseException.
	TimedStates bool
	// Reshard: SplitShard and MergeShards give usable lineage and closed
	// shards end (lineage and tail tests). moto's closed shards never end.
	Reshard bool
	// ChildShards: the end-of-shard GetRecords response (nil iterator) carries
	// ChildShards. Without it, tests exercise the ListShards fallback.
	ChildShards bool
	// UpdateShardCount is implemented (the count is right; kinesis-mock's and
	// moto's hash ranges are not uniform).
	UpdateShardCount bool
	// OnDemand: ON_DEMAND streams and UpdateStreamMode.
	OnDemand bool
	// ARNOnly: calls that name the stream by StreamARN alone.
	ARNOnly bool
	// Paging: ListShards pages with NextToken alone, as AWS requires.
	Paging bool
	// MaxPageSize is the most shards one ListShards page holds whatever
	// MaxResults says; 0 means no paging at all (one page, every shard).
	MaxPageSize int
	// ShardFilter is honoured (kinesis-mock: on the first page only).
	ShardFilter bool
	// Throttling: throughput limits are enforced. No emulator does; inject
	// throttling with internal/kinesistest/faults.
	Throttling bool
	// MillisBehind: GetRecords' MillisBehindLatest says how far from the
	// tip a read is (kinesalite and moto answer 0 always).
	MillisBehind bool
	// DescribeLimits is implemented.
	DescribeLimits bool
	// Consumers: Register/Describe/DeregisterStreamConsumer work.
	Consumers bool
	// SubscribeToShard is served as AWS serves it (the initial response,
	// the end of a shard with its children), so the SDK reads it without
	// internal/kinesistest/fanout's Shim in front (only the Fake).
	SubscribeToShard bool
	// ShardLimit: Options.ShardLimit is enforced with LimitExceededException.
	// kinesis-mock counts every shard it still lists toward it, closed ones
	// included, while AWS (and DescribeLimits' OpenShardCount, on
	// kinesis-mock too) counts open shards only.
	ShardLimit bool
	// ValidatesSplitKey: a NewStartingHashKey at the start or end of the range
	// is rejected as AWS does (kinesis-mock accepts it).
	ValidatesSplitKey bool
	// RealEndingSequenceNumber: a closed shard's EndingSequenceNumber is a
	// real sequence number of that shard (kinesis-mock: a constant).
	RealEndingSequenceNumber bool
	// AccountPerKey: a 12-digit access key id selects the account, so each
	// test package gets a private namespace (see AccountID).
	AccountPerKey bool
}

// CapsOf returns the capability table of a backend (zero Caps if unknown).
func CapsOf(b Backend) Caps {
	switch b {
	case Fake:
		// It follows AWS: one account (any key), no stream mode changes,
		// and its own quotas off, as the emulators' are.
		return Caps{
			TimedStates: true, Reshard: true, ChildShards: true, UpdateShardCount: true,
			OnDemand: true, ARNOnly: true, Paging: true, MaxPageSize: 100, ShardFilter: true, MillisBehind: true,
			DescribeLimits: true, Consumers: true, SubscribeToShard: true, ShardLimit: true,
			ValidatesSplitKey: true, RealEndingSequenceNumber: true,
		}
	case KinesisMock:
		return Caps{
			TimedStates: true, Reshard: true, ChildShards: true, UpdateShardCount: true,
			OnDemand: true, ARNOnly: true, Paging: true, MaxPageSize: 100, ShardFilter: true, MillisBehind: true,
			DescribeLimits: true, Consumers: true, ShardLimit: true, AccountPerKey: true,
		}
	case Kinesalite:
		return Caps{
			TimedStates: true, Reshard: true, ShardLimit: true,
			ValidatesSplitKey: true, RealEndingSequenceNumber: true,
		}
	case Moto:
		// moto rejects a split key at the range's start and end, not at
		// start+1, so it does not count as validating like AWS.
		return Caps{UpdateShardCount: true, DescribeLimits: true}
	}
	return Caps{}
}

// Available reports whether b can be started here: nil, or an error in one
// line saying what is missing and how to get it.
func Available(b Backend) error {
	switch b {
	case Fake:
		return nil // it is part of the test binary
	case KinesisMock, Kinesalite:
		if _, err := exec.LookPath("node"); err != nil {
			return fmt.Errorf("%s needs node on PATH (Node 20 or later)", b)
		}
		dir, err := packageDir(b)
		if err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
			return fmt.Errorf("%s is not installed (%s missing): run `make test`, or `cd testdata/emulator && npm ci --no-audit --no-fund`", b, dir)
		}
		return nil
	case Moto:
		if _, err := exec.LookPath("moto_server"); err != nil {
			return errors.New("moto needs moto_server on PATH (pip install 'moto[server]'); it is opt-in only")
		}
		return nil
	}
	return fmt.Errorf("unknown emulator backend %q (want %s, %s, %s or %s)", b, Fake, KinesisMock, Kinesalite, Moto)
}

// packageDir is the npm package directory of a node backend.
func packageDir(b Backend) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	pkg := map[Backend]string{KinesisMock: "kinesis-local", Kinesalite: "kinesalite"}[b]
	return filepath.Join(root, "testdata", "emulator", "node_modules", pkg), nil
}

// RepoRoot walks up from the working directory to the directory holding
// go.mod. go test runs each test binary in its package's directory, so this
// finds the module root from any package.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("emulator: no go.mod above the working directory")
		}
		dir = parent
	}
}
