package kpl

import (
	"reflect"
	"testing"

	"github.com/kinesis-shards/kinesis-shards/tail"
)

// What it builds, tail's decoder reads back, record for record.
func TestAggregateDecodes(t *testing.T) {
	in := []Record{
		{PartitionKey: "a", Data: []byte("one")},
		{PartitionKey: "b", ExplicitHashKey: "42", Data: []byte{0xff}},
		{PartitionKey: "a", Data: []byte{}},
		{PartitionKey: "c", ExplicitHashKey: "42", Data: []byte("four")},
	}
	got, ok := tail.Deaggregate(Aggregate(in))
	if !ok || len(got) != len(in) {
		t.Fatalf("Deaggregate: ok %v, %d records", ok, len(got))
	}
	for i, r := range in {
		want := tail.UserRecord{PartitionKey: r.PartitionKey, ExplicitHashKey: r.ExplicitHashKey, Data: r.Data, SubSequence: int64(i)}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("record %d: got %+v, want %+v", i, got[i], want)
		}
	}
}
