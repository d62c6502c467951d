package fanout

import (
	"encoding/json"
	"math/big"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// listShards answers ListShards (all pages at once): the stub's shards in
// their order, each with an even share of the hash key space unless a
// closed shard names it as a child (then that child's range and parents),
// and an ending sequence number once closed. It is enough for a client
// (tail) to schedule the stub's shards; reshard histories are the fake
// server's.
func (s *Stub) listShards(w http.ResponseWriter, body []byte) {
	var req struct{ StreamName, StreamARN, NextToken string }
	_ = json.Unmarshal(body, &req)
	if req.NextToken == "" && req.StreamName != s.opts.Stream && req.StreamARN != s.StreamARN {
		writeError(w, "ResourceNotFoundException", "stream not found")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	type shardJSON struct {
		ShardId               string
		ParentShardId         string `json:",omitempty"`
		AdjacentParentShardId string `json:",omitempty"`
		HashKeyRange          wireHashKeyRange
		SequenceNumberRange   map[string]string
	}
	space := new(big.Int).Lsh(big.NewInt(1), 128)
	step := new(big.Int).Div(space, big.NewInt(int64(len(s.order))))
	named := map[string]wireChildShard{}
	for _, sh := range s.shards {
		for _, c := range sh.children {
			named[aws.ToString(c.ShardId)] = childJSON(c)
		}
	}
	var out []shardJSON
	for i, id := range s.order {
		sh := s.shards[id]
		start := new(big.Int).Mul(step, big.NewInt(int64(i)))
		end := new(big.Int).Sub(new(big.Int).Add(start, step), big.NewInt(1))
		if i == len(s.order)-1 {
			end.Sub(space, big.NewInt(1))
		}
		j := shardJSON{ShardId: id, HashKeyRange: wireHashKeyRange{StartingHashKey: start.String(), EndingHashKey: end.String()},
			SequenceNumberRange: map[string]string{"StartingSequenceNumber": sh.base.String()}}
		if c, ok := named[id]; ok {
			j.HashKeyRange = c.HashKeyRange
			if len(c.ParentShards) > 0 {
				j.ParentShardId = c.ParentShards[0]
			}
			if len(c.ParentShards) > 1 {
				j.AdjacentParentShardId = c.ParentShards[1]
			}
		}
		if sh.closed {
			last := sh.base.String()
			if n := len(sh.records); n > 0 {
				last = sh.records[n-1].seq
			}
			j.SequenceNumberRange["EndingSequenceNumber"] = last
		}
		out = append(out, j)
	}
	writeJSON(w, map[string]any{"Shards": out})
}
