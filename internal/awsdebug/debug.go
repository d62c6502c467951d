package awsdebug

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kinesis-shards/kinesis-shards/internal/text"
)

type shardKey struct{}

// WithShard tells the log which shard a call is about when its input does
// not say (GetRecords carries only an iterator).
func WithShard(ctx context.Context, shardID string) context.Context {
	return context.WithValue(ctx, shardKey{}, shardID)
}

// Logger writes call lines to W; safe for concurrent use.
type Logger struct {
	mu  sync.Mutex
	W   io.Writer
	Now func() time.Time
}

// Printf writes one debug line.
func (l *Logger) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.W, "debug: "+format+"\n", args...)
}

// Middleware returns the APIOptions entry that logs every call.
func (l *Logger) Middleware() func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		// After the SDK registers the operation name in Initialize, and
		// around the retry loop, so one line covers all attempts.
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("kinesis-shards-debug",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				start := time.Now()
				out, md, err := next.HandleInitialize(ctx, in)
				l.logCall(ctx, in.Parameters, md, err, time.Since(start))
				return out, md, err
			}), middleware.After)
	}
}

func (l *Logger) logCall(ctx context.Context, params any, md middleware.Metadata, err error, took time.Duration) {
	var b strings.Builder
	b.WriteString(awsmiddleware.GetServiceID(ctx))
	b.WriteByte(' ')
	b.WriteString(awsmiddleware.GetOperationName(ctx))
	for _, f := range describeParams(params) {
		b.WriteByte(' ')
		b.WriteString(f)
	}
	if id, ok := ctx.Value(shardKey{}).(string); ok && id != "" && !strings.Contains(b.String(), "shard=") {
		b.WriteString(" shard=" + id)
	}
	if raw, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && raw != nil {
		fmt.Fprintf(&b, " status=%d", raw.StatusCode)
	}
	attempts := 1
	var failed []string
	if ar, ok := retry.GetAttemptResults(md); ok && len(ar.Results) > 0 {
		attempts = len(ar.Results)
		for i, r := range ar.Results {
			if r.Err != nil && i < len(ar.Results)-1 {
				failed = append(failed, text.OneLine(r.Err.Error()))
			}
		}
	}
	fmt.Fprintf(&b, " attempts=%d latency=%s", attempts, took.Round(100*time.Microsecond))
	if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok && id != "" {
		b.WriteString(" request-id=" + id)
	}
	if err != nil {
		b.WriteString(" error=" + quote(text.OneLine(err.Error())))
	}
	for i, f := range failed {
		fmt.Fprintf(&b, " retried-after[%d]=%s", i+1, quote(f))
	}
	l.Printf("%s", b.String())
}

// describeParams picks the fields that say what a call is about. Reflection
// is fine here: it only runs with --debug.
func describeParams(p any) []string {
	v := reflect.ValueOf(p)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for _, f := range []struct{ field, label string }{
		{"StreamARN", "stream"}, {"StreamName", "stream"}, {"TableName", "table"},
		{"ShardId", "shard"}, {"ShardToSplit", "shard"}, {"ShardToMerge", "shard"},
		{"AdjacentShardToMerge", "adjacent"}, {"ShardIteratorType", "iterator"},
		{"TargetShardCount", "target"},
	} {
		fv := v.FieldByName(f.field)
		if !fv.IsValid() {
			continue
		}
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		s := fmt.Sprint(fv.Interface())
		if s == "" {
			continue
		}
		if f.label == "stream" && hasLabel(out, "stream=") {
			continue
		}
		out = append(out, f.label+"="+s)
	}
	if e := v.FieldByName("Records"); e.IsValid() && e.Kind() == reflect.Slice {
		out = append(out, fmt.Sprintf("records=%d", e.Len()))
	}
	return out
}

func hasLabel(fs []string, prefix string) bool {
	for _, f := range fs {
		if strings.HasPrefix(f, prefix) {
			return true
		}
	}
	return false
}

func quote(s string) string {
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return fmt.Sprintf("%q", s)
}
