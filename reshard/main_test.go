package reshard

import (
	"os"
	"testing"

	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
)

// The emulator serves the tests of the window reader against a real
// service (hot_emulator_test.go); the rest need none.
func TestMain(m *testing.M) { os.Exit(emulator.Main(m, emulator.Options{})) }
