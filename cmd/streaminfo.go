package cmd

import (
	"strconv"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

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
