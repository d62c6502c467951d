package leasestest

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// KCLRow is one single-stream lease row: leaseKey (a shard id, or
// account:stream:epoch:shardId), checkpoint (a sequence number or a
// sentinel), sub-sequence 0, owner ("" = none), counter and parents.
func KCLRow(key, checkpoint, owner string, counter int, parents ...string) map[string]types.AttributeValue {
	item := map[string]types.AttributeValue{
		"leaseKey":                     &types.AttributeValueMemberS{Value: key},
		"checkpoint":                   &types.AttributeValueMemberS{Value: checkpoint},
		"checkpointSubSequenceNumber":  &types.AttributeValueMemberN{Value: "0"},
		"leaseCounter":                 &types.AttributeValueMemberN{Value: fmt.Sprint(counter)},
		"ownerSwitchesSinceCheckpoint": &types.AttributeValueMemberN{Value: "0"},
	}
	if owner != "" {
		item["leaseOwner"] = &types.AttributeValueMemberS{Value: owner}
	}
	if len(parents) > 0 {
		item["parentShardId"] = &types.AttributeValueMemberSS{Value: parents}
	}
	return item
}
