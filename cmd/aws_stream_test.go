package cmd

import (
	"context"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/kinesis-shards/kinesis-shards/internal/efo"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
)

// The client the commands build reads a SubscribeToShard event stream for
// as long as it lasts: over HTTP/2 with TLS (AWS_CA_BUNDLE trusting the
// server), over HTTP/1.1 to a plain http:// endpoint, and past the
// per-call timeout that every other operation gets.
func TestClientReadsEventStreams(t *testing.T) {
	for _, tt := range []struct {
		name  string
		tls   bool
		proto string
	}{
		{"https", true, "HTTP/2.0"},
		{"http", false, "HTTP/1.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stub := fanout.NewStub(t, fanout.StubOptions{TLS: tt.tls, CreatingPolls: -1, Tick: 20 * time.Millisecond})
			isolateAWSEnv(t)
			t.Setenv("AWS_REGION", "us-east-1")
			if tt.tls {
				p := filepath.Join(t.TempDir(), "ca.pem")
				if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: stub.Certificate().Raw}), 0o600); err != nil {
					t.Fatal(err)
				}
				t.Setenv("AWS_CA_BUNDLE", p)
			}
			cc := clientConfig{EndpointURL: stub.URL}
			cfg, err := loadAWSConfig(t.Context(), cc)
			if err != nil {
				t.Fatal(err)
			}
			c := newKinesisClient(cfg, cc)
			reg, err := c.RegisterStreamConsumer(t.Context(), &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(stub.StreamARN), ConsumerName: aws.String("t")})
			if err != nil {
				t.Fatal(err)
			}
			// A deadline longer than the per-call timeout, as a reader sets.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			out, err := c.SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: reg.Consumer.ConsumerARN,
				ShardId: aws.String("shardId-000000000000"), StartingPosition: &types.StartingPosition{Type: types.ShardIteratorTypeLatest}}, efo.HTTP1StreamFix)
			if err != nil {
				t.Fatal(err)
			}
			es := out.GetStream()
			defer es.Close()
			// Written after the call returned: read from the stream.
			time.Sleep(100 * time.Millisecond)
			want := stub.Put("shardId-000000000000", fanout.Record{PartitionKey: "k", Data: []byte("after the call")})
			var got []string
			for ev := range es.Events() {
				for _, r := range ev.(*types.SubscribeToShardEventStreamMemberSubscribeToShardEvent).Value.Records {
					got = append(got, aws.ToString(r.SequenceNumber))
				}
				if len(got) > 0 {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("records %v (stream error %v), want %v", got, es.Err(), want)
			}
			if calls := stub.Calls(); calls[0].Proto != tt.proto {
				t.Fatalf("protocol %s, want %s", calls[0].Proto, tt.proto)
			}
		})
	}
}

// withOperationTimeout: a SubscribeToShard keeps its caller's context (or
// gets one that outlives the call), every other call gets a deadline that
// ends with it.
func TestOperationTimeoutSparesStreams(t *testing.T) {
	for _, tt := range []struct {
		name       string
		params     any
		callerDL   bool
		wantDL     time.Duration // about
		aliveAfter bool
	}{
		{"ListShards", &kinesis.ListShardsInput{}, false, operationTimeout, false},
		{"SubscribeToShard", &kinesis.SubscribeToShardInput{}, false, streamTimeout, true},
		{"SubscribeToShard with a deadline", &kinesis.SubscribeToShardInput{}, true, time.Hour, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stack := middleware.NewStack("test", func() any { return nil })
			if err := withOperationTimeout(operationTimeout)(stack); err != nil {
				t.Fatal(err)
			}
			var seen context.Context
			h := middleware.DecorateHandler(middleware.HandlerFunc(func(ctx context.Context, in any) (any, middleware.Metadata, error) {
				seen = ctx
				return nil, middleware.Metadata{}, nil
			}), stack)
			ctx := t.Context()
			if tt.callerDL {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Hour)
				defer cancel()
			}
			if _, _, err := h.Handle(ctx, tt.params); err != nil {
				t.Fatal(err)
			}
			dl, ok := seen.Deadline()
			if left := time.Until(dl); !ok || left > tt.wantDL || left < tt.wantDL-time.Minute {
				t.Fatalf("deadline in %v (set %v), want about %v", left, ok, tt.wantDL)
			}
			if alive := seen.Err() == nil; alive != tt.aliveAfter {
				t.Fatalf("context alive after the call: %v, want %v", alive, tt.aliveAfter)
			}
		})
	}
}
