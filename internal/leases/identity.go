package leases

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kinesis-shards/kinesis-shards/tail"

	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
)

// A lease table's single-stream leases are keyed by bare shard ids, which
// every stream shares: the leases of a stream deleted and re-created under
// the same name, or of another stream, would pass for this one's (a
// SHARD_END lease of shardId-000000000000 would stop the new shard 0 from
// ever being read). So the first tail to use a table writes the stream's
// identity into it, in a row the KCL's readers skip (entityType is not
// LEASE), and every tail checks it before it takes a lease.
const (
	identityKey    = "kinesis-shards:stream"
	identityEntity = "KINESIS_SHARDS_STREAM"
	attrStreamARN  = "streamArn"
	attrCreated    = "streamCreationTimeMillis"
)

// ErrForeignTable: the table holds the leases of another stream, or leases
// kinesis-shards did not write (a KCL application's).
var ErrForeignTable = errors.New("lease table belongs to another stream")

// ClaimTable ties the table to the stream, or checks that it is tied to it.
// An empty table is claimed; a table claimed for another stream (another
// ARN, or the same ARN with another creation time: a re-created stream) is
// refused, and so is an unclaimed table that already holds leases, such as
// a KCL application's, whose leases a tail would otherwise take over and
// whose checkpoints it would move.
func ClaimTable(ctx context.Context, api DynamoAPI, table string, id tail.StreamIdentity) error {
	if id.ARN == "" {
		// A claim without an ARN could never be matched again.
		return fmt.Errorf("lease table %s: the service gave no ARN for the stream, and a lease table is tied to its stream by ARN and creation time", table)
	}
	for range 3 {
		claimed, leases, err := readClaim(ctx, api, table)
		if err != nil {
			return err
		}
		if claimed != nil {
			if claimed.ARN != id.ARN || claimed.Created.UnixMilli() != id.Created.UnixMilli() {
				return fmt.Errorf("%w: %s holds the leases of %s (created %s), not of %s (created %s); a stream deleted and re-created under the same name is another stream: use another --lease-table, or delete this one to start over",
					ErrForeignTable, table, claimed.ARN, formatTime(claimed.Created), id.ARN, formatTime(id.Created))
			}
			return nil
		}
		if leases > 0 {
			return fmt.Errorf("%w: %s already holds %d leases that are not tied to a stream (a KCL application's, or written by a kinesis-shards build from before lease tables were tied to their stream); tail would take them over and move their checkpoints: use a table of its own",
				ErrForeignTable, table, leases)
		}
		_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				attrKey:        &types.AttributeValueMemberS{Value: identityKey},
				attrEntityType: &types.AttributeValueMemberS{Value: identityEntity},
				attrStreamARN:  &types.AttributeValueMemberS{Value: id.ARN},
				attrCreated:    &types.AttributeValueMemberN{Value: strconv.FormatInt(id.Created.UnixMilli(), 10)},
			},
			ConditionExpression:      aws.String("attribute_not_exists(#k)"),
			ExpressionAttributeNames: map[string]string{"#k": attrKey},
		})
		if awserr.Of(err) == awserr.ConditionFailed {
			continue // another worker claimed it first: check its claim
		}
		if err != nil {
			return fmt.Errorf("lease table %s: write the stream's identity: %w", table, err)
		}
		return nil
	}
	return fmt.Errorf("lease table %s: the stream's identity could not be read or written", table)
}

// ReadClaim returns the stream a tail lease table is tied to (nil: none)
// and how many leases it holds, and writes nothing (kinesis-shards lag).
func ReadClaim(ctx context.Context, api DynamoAPI, table string) (*tail.StreamIdentity, int, error) {
	return readClaim(ctx, api, table)
}

// readClaim returns the table's identity row, if any, and how many lease
// rows it holds.
func readClaim(ctx context.Context, api DynamoAPI, table string) (*tail.StreamIdentity, int, error) {
	var (
		claimed *tail.StreamIdentity
		leases  int
	)
	err := scanItems(ctx, api, table, 0, func(item map[string]types.AttributeValue) error {
		if k, _ := str(item, attrKey); k == identityKey {
			arn, err1 := str(item, attrStreamARN)
			ms, err2 := num(item, attrCreated)
			err := errors.Join(err1, err2)
			if err == nil && arn == "" {
				err = errors.New("no stream ARN")
			}
			if err != nil {
				return fmt.Errorf("lease table %s: its stream identity row is not valid (%v): delete the row %q or use another table", table, err, identityKey)
			}
			claimed = &tail.StreamIdentity{ARN: arn, Created: time.UnixMilli(ms).UTC()}
			return nil
		}
		if _, ok, err := ParseItem(item); err == nil && ok {
			leases++
		}
		return nil
	})
	return claimed, leases, err
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }
