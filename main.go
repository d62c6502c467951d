// Command kinesis-shards shows, reads and reshards Amazon Kinesis Data
// Streams shards. See README.md.
package main

import (
	"os"

	"github.com/kinesis-shards/kinesis-shards/cmd"
)

func main() {
	os.Exit(cmd.Execute())
}
