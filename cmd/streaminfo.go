package cmd

import (
	"context"
	"strconv"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// describeAndList reads the stream's summary, then lists its shards.
func describeAndList(ctx context.Context, api interface {
	kstream.DescribeAPI
	lineage.ShardLister
}, ref kstream.Ref) (*kstream.Summary, *lineage.Graph, error) {
	sum, err := kstream.Describe(ctx, api, ref)
	if err != nil {
		return nil, nil, err
	}
	g, err := lineage.Load(ctx, api, lineage.ListOptions{StreamName: ref.Name, StreamARN: ref.ARN})
	if err != nil {
		return nil, nil, err
	}
	return sum, g, nil
}

// streamInfo is one stream in `streams` and `create` output; its JSON field
// names are part of the documented interface.
type streamInfo struct {
	Name           string `json:"stream"`
	ARN            string `json:"streamArn"`
	Status         string `json:"status"`
	Mode           string `json:"mode"`
	OpenShards     int    `json:"openShards"`
	TotalShards    *int   `json:"totalShards,omitempty"`
	RetentionHours int    `json:"retentionHours,omitempty"`
	CreatedAt      string `json:"createdAt,omitempty"`
}

var streamHeader = []string{"STREAM", "STATUS", "MODE", "OPEN", "TOTAL", "RETENTION", "CREATED"}

func streamInfoFrom(s *kstream.Summary, total *int) streamInfo {
	i := streamInfo{
		Name:           s.Name,
		ARN:            s.ARN,
		Status:         string(s.Status),
		Mode:           s.ModeName(),
		OpenShards:     s.OpenShards,
		TotalShards:    total,
		RetentionHours: s.RetentionHours,
	}
	if !s.Created.IsZero() {
		i.CreatedAt = s.Created.UTC().Format(time.RFC3339)
	}
	return i
}

func (i streamInfo) row() []string {
	total, ret := "-", "-"
	if i.TotalShards != nil {
		total = strconv.Itoa(*i.TotalShards)
	}
	if i.RetentionHours > 0 {
		ret = strconv.Itoa(i.RetentionHours) + "h"
	}
	created := i.CreatedAt
	if created == "" {
		created = "-"
	}
	return []string{i.Name, i.Status, i.Mode, strconv.Itoa(i.OpenShards), total, ret, created}
}
