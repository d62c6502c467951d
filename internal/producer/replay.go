package producer

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/kinesis-shards/kinesis-shards/lineage"
)

// The input formats (Options.Format).
const (
	FormatLines = "lines" // each line is a record's data
	FormatJSON  = "json"  // each line is a `tail --format json` record
)

// tailJSONLine is a line of `tail --format json` as put reads it back.
// Pointers tell a missing field from an empty one.
type tailJSONLine struct {
	ShardID         *string `json:"shardId"`
	SequenceNumber  *string `json:"sequenceNumber"`
	PartitionKey    *string `json:"partitionKey"`
	ExplicitHashKey *string `json:"explicitHashKey"`
	Data            *string `json:"data"`
	DataEncoding    *string `json:"dataEncoding"`
	Decompressed    *bool   `json:"decompressed"`
	// A `tail --cwlogs` line has these instead of a partition key and data.
	LogEventIndex json.RawMessage `json:"logEventIndex"`
}

// errNotTailRecord marks a line that is not a tail JSON record.
var errNotTailRecord = errors.New("not a tail JSON record")

// parseTailJSONLine reads one line of `tail --format json` into the entry
// that writes it again: its payload (base64-decoded when tail encoded it),
// its partition key and its explicit hash key, both checked as the service
// would. The other fields (shard, sequence numbers, arrival time) name where
// the record was and are not written. unpacked reports a record that tail
// had unpacked (--decompress): it is written unpacked.
func parseTailJSONLine(line []byte) (e entry, unpacked bool, err error) {
	var l tailJSONLine
	if err := json.Unmarshal(line, &l); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return e, false, fmt.Errorf("%w: %q is %s, not %s", errNotTailRecord, te.Field, jsonKindName(te.Value), jsonKindName(te.Type.Kind().String()))
		}
		if t := strings.TrimSpace(string(line)); json.Valid(line) {
			return e, false, fmt.Errorf("%w: %s, not an object", errNotTailRecord, jsonKindName(jsonValueKind(t)))
		}
		return e, false, fmt.Errorf("%w: not JSON (%v)", errNotTailRecord, err)
	}
	if l.LogEventIndex != nil {
		return e, false, errors.New("a log event of tail --cwlogs, not a record: put replays records (tail them without --cwlogs)")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"shardId", l.ShardID}, {"sequenceNumber", l.SequenceNumber}, {"partitionKey", l.PartitionKey}, {"data", l.Data}} {
		if f.v == nil {
			return e, false, fmt.Errorf("%w: it has no %q", errNotTailRecord, f.name)
		}
	}
	if err := CheckPartitionKey(*l.PartitionKey); err != nil {
		return e, false, fmt.Errorf("partitionKey: %w", err)
	}
	e.key, e.data = *l.PartitionKey, []byte(*l.Data)
	switch {
	case l.DataEncoding == nil:
	case *l.DataEncoding == "base64":
		if e.data, err = base64.StdEncoding.DecodeString(*l.Data); err != nil {
			return e, false, fmt.Errorf("data is not valid base64 (%v)", err)
		}
	default:
		return e, false, fmt.Errorf("dataEncoding %q is not base64, the only one tail writes", *l.DataEncoding)
	}
	if l.ExplicitHashKey != nil {
		// A KPL user record's explicit hash key comes from whoever wrote
		// the aggregate: the service takes only a canonical decimal in range.
		if _, err := lineage.ParseHashKey(*l.ExplicitHashKey); err != nil {
			return e, false, fmt.Errorf("explicitHashKey: %w", err)
		}
		e.ehk = *l.ExplicitHashKey
	}
	return e, l.Decompressed != nil && *l.Decompressed, nil
}

// jsonValueKind is the kind of a valid JSON text, as encoding/json names it.
func jsonValueKind(t string) string {
	switch t[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// jsonKindName names a JSON or Go kind as a reader says it.
func jsonKindName(k string) string {
	switch k {
	case "string":
		return "a string"
	case "number", "int", "int64", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "array", "slice":
		return "an array"
	case "object", "map", "struct":
		return "an object"
	}
	return k
}

// entryFor makes the entry of an input line: the line and its key, or the
// record of a tail JSON line. Errors name the line.
func (p *putter) entryFor(l inputLine) (entry, error) {
	if p.opts.Format != FormatJSON {
		key, err := p.keyFor(l)
		return entry{line: l.n, key: key, data: l.data}, err
	}
	e, unpacked, err := parseTailJSONLine(l.data)
	if err != nil {
		return e, fmt.Errorf("line %d: %w", l.n, err)
	}
	if unpacked && !p.warnedUnpacked {
		p.warnedUnpacked = true
		p.opts.Warnf("line %d: tail had unpacked this record (--decompress); it is written unpacked, not as it was stored (tail without --decompress copies records byte for byte)", l.n)
	}
	e.line = l.n
	return e, nil
}
