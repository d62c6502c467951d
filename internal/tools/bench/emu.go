package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// Helpers for streams on an emulator, for code without a testing.TB.

func startEmulator(ctx context.Context, c *config, b emulator.Backend) (*emulator.Emulator, *kinesis.Client, error) {
	c.log("starting %s", b)
	e, err := emulator.Start(ctx, emulator.Options{Backend: b, ShardLimit: 10000})
	if err != nil {
		return nil, nil, err
	}
	return e, kinesis.New(e.ClientOptions()), nil
}

// streamName is unique per run of the program.
func streamName(prefix string) string {
	return fmt.Sprintf("bench-%s-%d", prefix, time.Now().UnixNano()%1e9)
}

func createStream(ctx context.Context, k *kinesis.Client, name string, shards int) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := k.CreateStream(cctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(int32(shards))}); err != nil {
		return fmt.Errorf("create stream %s: %w", name, err)
	}
	return waitActive(ctx, k, name)
}

// waitActive polls DescribeStreamSummary every 50 ms (docs/KINESIS-NOTES.md §10).
func waitActive(ctx context.Context, k *kinesis.Client, name string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := k.DescribeStreamSummary(cctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(name)})
		cancel()
		switch {
		case err == nil && out.StreamDescriptionSummary.StreamStatus == types.StreamStatusActive:
			return nil
		case err != nil && awserr.Of(err) != awserr.NotFound:
			return fmt.Errorf("describe %s: %w", name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stream %s not ACTIVE after 60s", name)
		}
		if err := awscall.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

func deleteStream(k *kinesis.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = k.DeleteStream(ctx, &kinesis.DeleteStreamInput{StreamName: aws.String(name)})
}

// putRecord writes one record, to the shard of ehk when it is not "".
func putRecord(ctx context.Context, k *kinesis.Client, name, key, ehk string, data []byte) (*kinesis.PutRecordOutput, error) {
	in := &kinesis.PutRecordInput{StreamName: aws.String(name), PartitionKey: aws.String(key), Data: data}
	if ehk != "" {
		in.ExplicitHashKey = aws.String(ehk)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := k.PutRecord(cctx, in)
	if err != nil {
		return nil, fmt.Errorf("put record to %s: %w", name, err)
	}
	return out, nil
}

// putBatches writes n records of size bytes with PutRecords, 500 a call.
func putBatches(ctx context.Context, k *kinesis.Client, name string, n, size int) error {
	data := []byte(strings.Repeat("x", size))
	for done := 0; done < n; {
		m := min(500, n-done)
		entries := make([]types.PutRecordsRequestEntry, m)
		for i := range entries {
			entries[i] = types.PutRecordsRequestEntry{PartitionKey: aws.String(fmt.Sprintf("k%d", done+i)), Data: data}
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		out, err := k.PutRecords(cctx, &kinesis.PutRecordsInput{StreamName: aws.String(name), Records: entries})
		cancel()
		if err != nil {
			return fmt.Errorf("put records: %w", err)
		}
		if f := aws.ToInt32(out.FailedRecordCount); f > 0 {
			return fmt.Errorf("put records: %d failed", f)
		}
		done += m
	}
	return nil
}

func listShards(ctx context.Context, k *kinesis.Client, name string) ([]types.Shard, error) {
	var shards []types.Shard
	in := &kinesis.ListShardsInput{StreamName: aws.String(name)}
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, err := k.ListShards(cctx, in)
		cancel()
		if err != nil {
			return nil, err
		}
		shards = append(shards, out.Shards...)
		if out.NextToken == nil {
			return shards, nil
		}
		in = &kinesis.ListShardsInput{NextToken: out.NextToken}
	}
}
