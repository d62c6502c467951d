package lineage

import (
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// BenchmarkBuild10000 builds a shuffled 10,000-shard history of random
// splits and merges (genHistory).
func BenchmarkBuild10000(b *testing.B) {
	listing := genHistory(10000, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(listing); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuild10000Sorted is the same history in id order, the way the
// service lists it: the listing's strings are then read in memory order.
func BenchmarkBuild10000Sorted(b *testing.B) {
	listing := genHistory(10000, 1)
	slices.SortFunc(listing, func(x, y types.Shard) int { return CompareShardIDs(*x.ShardId, *y.ShardId) })
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(listing); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHashKeyString(b *testing.B) {
	for _, k := range []struct {
		name string
		key  HashKey
	}{{"max", MaxHashKey}, {"2^127", keyH}, {"small", HashKeyFromUint64(123456789)}} {
		b.Run(k.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = k.key.String()
			}
		})
	}
}

func BenchmarkHashKeyStringBig(b *testing.B) { // the math/big baseline
	b.ReportAllocs()
	for b.Loop() {
		_ = MaxHashKey.Big().String()
	}
}

func BenchmarkParseHashKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHashKey(dec2p128m1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPartitionKeyHash(b *testing.B) {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "customer-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = PartitionKeyHash(keys[i&1023])
		i++
	}
}
