package getrecords

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/wirestub"
)

// The GetRecords fast decoder must give the SDK's answer for every body it
// accepts, and hand everything else to the SDK. These tests and the fuzz
// target compare the two on the same bytes. (The decoder's benchmark is
// tail's BenchmarkDecodeGetRecords, beside the rest of the hot path.)

func getRecordsVia(body []byte, opts ...func(*kinesis.Options)) (*kinesis.GetRecordsOutput, error) {
	out, err := wirestub.BodyClient(200, body).GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String("it")}, opts...)
	if out != nil {
		out.ResultMetadata = kinesis.GetRecordsOutput{}.ResultMetadata
	}
	return out, err
}

func sameOutput(t testing.TB, body []byte, got, want *kinesis.GetRecordsOutput) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("body %.300q\nfast %.600s\nsdk  %.600s", body, g, w)
	}
}

const rec1 = `{"SequenceNumber":"49590338271490256608559692538361571095921575989136588898","ApproximateArrivalTimestamp":1767225600.123,"Data":"aGVsbG8=","PartitionKey":"k1"}`

func decodeCases(t testing.TB) []struct {
	name string
	body string
	fast bool
} {
	stub, err := wirestub.Start(wirestub.Options{RecordSize: 100, RecordsPerPage: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer stub.Close()
	bin, err := wirestub.Start(wirestub.Options{RecordSize: 33, RecordsPerPage: 5, Binary: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	var indented bytes.Buffer
	if err := json.Indent(&indented, stub.PageBody(), "", "\t "); err != nil {
		t.Fatal(err)
	}
	return []struct {
		name string
		body string
		fast bool
	}{
		{"stub page", string(stub.PageBody()), true},
		{"binary page", string(bin.PageBody()), true},
		{"indented", indented.String(), true},
		{"empty", `{"Records":[],"NextShardIterator":"it2","MillisBehindLatest":0}`, true},
		{"empty object", `{}`, true},
		{"one", `{"Records":[` + rec1 + `],"NextShardIterator":"it2","MillisBehindLatest":5}`, true},
		{"member order, KMS, empty data", `{"MillisBehindLatest":0,"Records":[{"PartitionKey":"é","Data":"","EncryptionType":"KMS","ApproximateArrivalTimestamp":1.7672256001234E9,"SequenceNumber":"1"},` + rec1 + `],"NextShardIterator":"x"}`, true},
		{"integer timestamp", `{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":1767225600,"Data":"AA==","PartitionKey":"k"}]}`, true},
		{"end of shard, no children", `{"Records":[` + rec1 + `],"NextShardIterator":null,"MillisBehindLatest":0}`, true},
		{"empty ChildShards", `{"Records":[],"NextShardIterator":"i","ChildShards":[],"MillisBehindLatest":0}`, true},
		{"null members", `{"Records":null,"NextShardIterator":null,"MillisBehindLatest":null,"ChildShards":null}`, true},
		// Handed to the SDK:
		{"ChildShards", `{"Records":[` + rec1 + `],"MillisBehindLatest":0,"ChildShards":[{"ShardId":"shardId-000000000001","ParentShards":["shardId-000000000000"],"HashKeyRange":{"StartingHashKey":"0","EndingHashKey":"1"}}]}`, false},
		{"escaped key", `{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":1767225600.5,"Data":"AA==","PartitionKey":"a\"b\u00e9"}],"NextShardIterator":"i"}`, false},
		{"escaped slash in data", `{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":1767225600.5,"Data":"ab\/c","PartitionKey":"k"}],"NextShardIterator":"i"}`, false},
		{"unknown member", `{"Records":[],"NextShardIterator":"i","Other":{"a":[1,2]}}`, false},
		{"unknown record member", `{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":1,"Data":"AA==","PartitionKey":"k","X":1}]}`, false},
		{"record without data", `{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":1,"PartitionKey":"k"}]}`, false},
		{"null data", `{"Records":[{"SequenceNumber":"1","ApproximateArrivalTimestamp":1,"Data":null,"PartitionKey":"k"}]}`, false},
		{"data with a line break", "{\"Records\":[{\"SequenceNumber\":\"1\",\"ApproximateArrivalTimestamp\":1,\"Data\":\"AA\\n==\",\"PartitionKey\":\"k\"}]}", false},
		{"unknown null member", "{\"\x00\":null}", false},
		{"leading zero", `{"Records":[{"PartitionKey":"","Data":"","ApproximateArrivalTimestamp":00,"SequenceNumber":""}]}`, false},
		{"float behind", `{"Records":[],"MillisBehindLatest":1.5}`, false},
	}
}

func TestDecodeGetRecordsMatchesSDK(t *testing.T) {
	for _, tc := range decodeCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			var fast kinesis.GetRecordsOutput
			if ok := Decode(body, &fast); ok != tc.fast {
				t.Fatalf("fast path taken: %v, want %v", ok, tc.fast)
			}
			want, werr := getRecordsVia(body)
			got, gerr := getRecordsVia(body, Option)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("errors differ: fast %v, sdk %v", gerr, werr)
			}
			if werr != nil {
				return
			}
			sameOutput(t, body, got, want)
			if tc.fast {
				sameOutput(t, body, &fast, want)
			}
		})
	}
}

// Error responses decode as before: typed, through the SDK.
func TestDecodeGetRecordsErrors(t *testing.T) {
	body := []byte(`{"__type":"ProvisionedThroughputExceededException","message":"Rate exceeded for shard"}`)
	_, err := wirestub.BodyClient(400, body).GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String("it")}, awscall.Once, Option)
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) {
		t.Fatalf("got %v", err)
	}
	_, err = wirestub.BodyClient(200, []byte(`{"Records":[`)).GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String("it")}, awscall.Once, Option)
	if err == nil || !strings.Contains(err.Error(), "deserialization failed") {
		t.Fatalf("truncated body: %v", err)
	}
}

func FuzzDecodeGetRecords(f *testing.F) {
	for _, tc := range decodeCases(f) {
		if len(tc.body) < 4096 {
			f.Add([]byte(tc.body))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var fast kinesis.GetRecordsOutput
		if !Decode(body, &fast) {
			return
		}
		want, err := getRecordsVia(body)
		if err != nil {
			t.Fatalf("fast path accepted what the SDK refuses (%v): %q", err, body)
		}
		sameOutput(t, body, &fast, want)
	})
}
