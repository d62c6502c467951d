package leases

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// The KCL's checkpoint sentinels.
const (
	TrimHorizon = "TRIM_HORIZON"
	Latest      = "LATEST"
	AtTimestamp = "AT_TIMESTAMP"
	ShardEnd    = "SHARD_END"
)

// Attribute names of the KCL schema.
const (
	attrKey           = "leaseKey"
	attrCheckpoint    = "checkpoint"
	attrSubSeq        = "checkpointSubSequenceNumber"
	attrOwner         = "leaseOwner"
	attrCounter       = "leaseCounter"
	attrSwitches      = "ownerSwitchesSinceCheckpoint"
	attrParents       = "parentShardId"
	attrChildren      = "childShardIds"
	attrStartHash     = "startingHashKey"
	attrEndHash       = "endingHashKey"
	attrPending       = "pendingCheckpoint"
	attrEntityType    = "entityType"
	attrStreamName    = "streamName"
	attrShardID       = "shardId"
	attrCheckpointOwn = "checkpointOwner"
	// attrHandOffBy: when a graceful hand-off (checkpointOwner set) may
	// be given up on, in Unix milliseconds.
	attrHandOffBy = "checkpointOwnerTimeoutTimestampMillis"
)

// Lease is one row of a lease table.
type Lease struct {
	Key            string // leaseKey: a shard id, or account:stream:epoch:shardId
	Stream         string // multi-stream: account:stream:epoch; "" for single-stream tables
	ShardID        string
	Checkpoint     string // a sequence number or a sentinel
	SubSequence    int64
	Owner          string // "" = nobody
	Counter        int64
	OwnerSwitches  int64
	Parents        []string
	Children       []string
	StartHash      string
	EndHash        string
	PendingCheck   string
	HasSubSequence bool
	// From: the time (Unix milliseconds) an AT_TIMESTAMP checkpoint starts
	// at, in an attribute of ours; 0 when absent (the KCL writes none).
	From int64
	// LogEvent (with HasLogEvent): the checkpoint is inside a CloudWatch
	// Logs batch, at this event of it (an attribute of ours).
	LogEvent    int64
	HasLogEvent bool
	// CheckpointOwner is set while the lease is handed over gracefully,
	// as the KCL 3 does: Owner is then the worker it goes to, and
	// CheckpointOwner the one still reading it, which checkpoints what it
	// wrote and then lets go. HandOffBy (Unix milliseconds) is when the
	// taker may stop waiting for that.
	CheckpointOwner string
	HandOffBy       int64
}

// HandingOff reports whether the lease is being handed over.
func (l *Lease) HandingOff() bool { return l.CheckpointOwner != "" }

// Finished reports whether the lease's shard was read to its end.
func (l *Lease) Finished() bool { return l.Checkpoint == ShardEnd }

// DynamoAPI is the part of the DynamoDB client the package uses.
type DynamoAPI interface {
	Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}

// SplitLeaseKey reads a lease key: a bare shard id (single-stream tables)
// or account:streamName:creationEpoch:shardId (multi-stream applications).
func SplitLeaseKey(key string) (stream, shard string) {
	if i := strings.LastIndexByte(key, ':'); i >= 0 {
		return key[:i], key[i+1:]
	}
	return "", key
}

// ParseItem reads one row. ok is false for rows that are not leases (KCL
// ≥ 3.5 keeps other entities in the table, marked by entityType). Fields of
// an unexpected type are an error.
func ParseItem(item map[string]types.AttributeValue) (l Lease, ok bool, err error) {
	if et, has := item[attrEntityType]; has {
		s, isS := et.(*types.AttributeValueMemberS)
		if !isS || s.Value != "LEASE" {
			return Lease{}, false, nil
		}
	}
	key, err := str(item, attrKey)
	if err != nil || key == "" {
		return Lease{}, false, fmt.Errorf("lease row without a leaseKey")
	}
	l.Key = key
	l.Stream, l.ShardID = SplitLeaseKey(key)
	if s, err := str(item, attrShardID); err == nil && s != "" {
		l.ShardID = s
	}
	if s, err := str(item, attrStreamName); err == nil && s != "" {
		l.Stream = s
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{attrCheckpoint, &l.Checkpoint}, {attrOwner, &l.Owner}, {attrStartHash, &l.StartHash}, {attrEndHash, &l.EndHash}, {attrPending, &l.PendingCheck}, {attrCheckpointOwn, &l.CheckpointOwner}} {
		if *f.dst, err = str(item, f.name); err != nil {
			return Lease{}, false, fmt.Errorf("lease %s: %w", key, err)
		}
	}
	for _, f := range []struct {
		name string
		dst  *int64
	}{{attrCounter, &l.Counter}, {attrSwitches, &l.OwnerSwitches}, {attrSubSeq, &l.SubSequence}, {attrFrom, &l.From}, {attrLogEvent, &l.LogEvent}, {attrHandOffBy, &l.HandOffBy}} {
		if *f.dst, err = num(item, f.name); err != nil {
			return Lease{}, false, fmt.Errorf("lease %s: %w", key, err)
		}
	}
	_, l.HasSubSequence = item[attrSubSeq]
	if _, l.HasLogEvent = item[attrLogEvent]; l.HasLogEvent && l.LogEvent < 0 {
		return Lease{}, false, fmt.Errorf("lease %s: %s %d is negative", key, attrLogEvent, l.LogEvent)
	}
	if l.Parents, err = strSet(item, attrParents); err != nil {
		return Lease{}, false, fmt.Errorf("lease %s: %w", key, err)
	}
	if l.Children, err = strSet(item, attrChildren); err != nil {
		return Lease{}, false, fmt.Errorf("lease %s: %w", key, err)
	}
	return l, true, nil
}

func str(item map[string]types.AttributeValue, name string) (string, error) {
	v, ok := item[name]
	if !ok {
		return "", nil
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, nil
	case *types.AttributeValueMemberNULL:
		return "", nil
	}
	return "", fmt.Errorf("%s is not a string", name)
}

func num(item map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := item[name]
	if !ok {
		return 0, nil
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is not an integer: %q", name, v.Value)
		}
		return n, nil
	case *types.AttributeValueMemberS: // lenient, as some KCL versions write odd types
		n, err := strconv.ParseInt(v.Value, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is not an integer: %q", name, v.Value)
		}
		return n, nil
	case *types.AttributeValueMemberNULL:
		return 0, nil
	}
	return 0, fmt.Errorf("%s is not a number", name)
}

func strSet(item map[string]types.AttributeValue, name string) ([]string, error) {
	v, ok := item[name]
	if !ok {
		return nil, nil
	}
	switch v := v.(type) {
	case *types.AttributeValueMemberSS:
		out := append([]string(nil), v.Value...)
		sort.Strings(out)
		return out, nil
	case *types.AttributeValueMemberS: // a single id written as a string
		return []string{v.Value}, nil
	case *types.AttributeValueMemberL:
		var out []string
		for _, e := range v.Value {
			s, ok := e.(*types.AttributeValueMemberS)
			if !ok {
				return nil, fmt.Errorf("%s holds a non-string", name)
			}
			out = append(out, s.Value)
		}
		sort.Strings(out)
		return out, nil
	case *types.AttributeValueMemberNULL:
		return nil, nil
	}
	return nil, fmt.Errorf("%s is not a string set", name)
}

// Scan reads every lease of the table (all pages, consistent reads).
// Rows that are not leases are skipped.
func Scan(ctx context.Context, api DynamoAPI, table string) ([]Lease, error) {
	return scanLeases(ctx, api, table, 0)
}

// scanLeases is Scan with each page under its own deadline (callTimeout;
// 0 = none but ctx's).
func scanLeases(ctx context.Context, api DynamoAPI, table string, callTimeout time.Duration) ([]Lease, error) {
	var out []Lease
	err := scanItems(ctx, api, table, callTimeout, func(item map[string]types.AttributeValue) error {
		l, ok, err := ParseItem(item)
		if err != nil {
			return fmt.Errorf("lease table %s: %w", table, err)
		}
		if ok {
			out = append(out, l)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// scanItems calls fn with every row of the table (all pages, consistent
// reads) until fn fails.
func scanItems(ctx context.Context, api DynamoAPI, table string, callTimeout time.Duration, fn func(map[string]types.AttributeValue) error) error {
	var start map[string]types.AttributeValue
	for {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if callTimeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, callTimeout)
		}
		page, err := api.Scan(cctx, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start})
		cancel()
		if err != nil {
			return fmt.Errorf("scan lease table %s: %w", table, err)
		}
		for _, item := range page.Items {
			if err := fn(item); err != nil {
				return err
			}
		}
		if len(page.LastEvaluatedKey) == 0 {
			return nil
		}
		start = page.LastEvaluatedKey
	}
}

// ErrNoTable: the lease table does not exist.
var ErrNoTable = errors.New("lease table does not exist")

// CheckTable returns ErrNoTable (wrapped) when the table is missing, and an
// error when its key schema is not the KCL's (leaseKey, a string hash key).
func CheckTable(ctx context.Context, api DynamoAPI, table string) error {
	out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if awserr.Of(err) == awserr.NotFound {
		return fmt.Errorf("%w: %s", ErrNoTable, table)
	}
	if err != nil {
		return fmt.Errorf("describe lease table %s: %w", table, err)
	}
	ks := out.Table.KeySchema
	if len(ks) != 1 || aws.ToString(ks[0].AttributeName) != attrKey || ks[0].KeyType != types.KeyTypeHash {
		return fmt.Errorf("table %s is not a lease table: its key is not leaseKey (string, hash key only)", table)
	}
	return nil
}

// CreateTable creates a lease table in the KCL's schema, on-demand
// capacity, and waits until it is ACTIVE.
func CreateTable(ctx context.Context, api DynamoAPI, table string) error {
	_, err := api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(attrKey), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(attrKey), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil && awserr.Of(err) != awserr.InUse {
		return fmt.Errorf("create lease table %s: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(api, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = 100*time.Millisecond, 2*time.Second
	})
	return w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 2*time.Minute)
}
