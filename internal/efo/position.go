package efo

import (
	"fmt"
	"math/big"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
)

// Position is where a subscription starts: TRIM_HORIZON, LATEST,
// AT_TIMESTAMP, or AT_ or AFTER_SEQUENCE_NUMBER.
type Position struct {
	Type           types.ShardIteratorType
	SequenceNumber string    // AT_ and AFTER_SEQUENCE_NUMBER
	Timestamp      time.Time // AT_TIMESTAMP
}

// TrimHorizon starts at the shard's oldest record.
func TrimHorizon() Position { return Position{Type: types.ShardIteratorTypeTrimHorizon} }

// Latest starts after the shard's newest record.
func Latest() Position { return Position{Type: types.ShardIteratorTypeLatest} }

// AtTimestamp starts at the first record that arrived at t or later.
func AtTimestamp(t time.Time) Position {
	return Position{Type: types.ShardIteratorTypeAtTimestamp, Timestamp: t}
}

// AtSequence starts at the record with this sequence number.
func AtSequence(seq string) Position {
	return Position{Type: types.ShardIteratorTypeAtSequenceNumber, SequenceNumber: seq}
}

// AfterSequence starts right after the record with this sequence number.
func AfterSequence(seq string) Position {
	return Position{Type: types.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: seq}
}

// String is the position as the debug lines show it.
func (p Position) String() string {
	switch p.Type {
	case types.ShardIteratorTypeAtSequenceNumber, types.ShardIteratorTypeAfterSequenceNumber:
		return string(p.Type) + " " + p.SequenceNumber
	case types.ShardIteratorTypeAtTimestamp:
		return string(p.Type) + " " + p.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return string(p.Type)
}

// seqRE is the shape of a sequence number on the wire.
var seqRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,128})$`)

func (p Position) validate() error {
	switch p.Type {
	case types.ShardIteratorTypeTrimHorizon, types.ShardIteratorTypeLatest:
		return nil
	case types.ShardIteratorTypeAtTimestamp:
		if p.Timestamp.IsZero() {
			return fmt.Errorf("starting position AT_TIMESTAMP needs a timestamp")
		}
		return nil
	case types.ShardIteratorTypeAtSequenceNumber, types.ShardIteratorTypeAfterSequenceNumber:
		if !seqRE.MatchString(p.SequenceNumber) {
			return fmt.Errorf("starting position %s: %q is not a sequence number", p.Type, p.SequenceNumber)
		}
		return nil
	}
	return fmt.Errorf("unknown starting position type %q", p.Type)
}

func (p Position) input() *types.StartingPosition {
	sp := &types.StartingPosition{Type: p.Type}
	switch p.Type {
	case types.ShardIteratorTypeAtSequenceNumber, types.ShardIteratorTypeAfterSequenceNumber:
		sp.SequenceNumber = aws.String(p.SequenceNumber)
	case types.ShardIteratorTypeAtTimestamp:
		sp.Timestamp = aws.Time(p.Timestamp)
	}
	return sp
}

// seqNum is a sequence number read as a number: they are compared as
// numbers, never as strings. nil when s is not one.
func seqNum(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok || n.Sign() < 0 {
		return nil
	}
	return n
}
