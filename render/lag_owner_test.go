package render

import (
	"testing"

	"github.com/kinesis-shards/kinesis-shards/internal/consumer"
)

// A lease on its way from one worker to another shows both.
func TestLagOwnerDuringAHandOff(t *testing.T) {
	if got := lagOwner(consumer.ShardLag{Owner: "b", HandingOver: "a"}); got != "a → b" {
		t.Fatalf("%q", got)
	}
	if got := lagOwner(consumer.ShardLag{Owner: "b"}); got != "b" {
		t.Fatalf("%q", got)
	}
}
