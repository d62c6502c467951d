package tail

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"io"
	"testing"
)

// aggregate builds a KPL aggregate (the encoder the KPL uses, by hand).
func aggregate(keys, ehks []string, recs []UserRecord) []byte {
	var body []byte
	putTag := func(b []byte, field, wire uint64) []byte { return binary.AppendUvarint(b, field<<3|wire) }
	putBytes := func(b []byte, field uint64, v []byte) []byte {
		b = putTag(b, field, 2)
		b = binary.AppendUvarint(b, uint64(len(v)))
		return append(b, v...)
	}
	for _, k := range keys {
		body = putBytes(body, 1, []byte(k))
	}
	for _, e := range ehks {
		body = putBytes(body, 2, []byte(e))
	}
	for _, r := range recs {
		var rb []byte
		ki := -1
		for i, k := range keys {
			if k == r.PartitionKey {
				ki = i
			}
		}
		rb = putTag(rb, 1, 0)
		rb = binary.AppendUvarint(rb, uint64(ki))
		if r.ExplicitHashKey != "" {
			for i, e := range ehks {
				if e == r.ExplicitHashKey {
					rb = putTag(rb, 2, 0)
					rb = binary.AppendUvarint(rb, uint64(i))
				}
			}
		}
		rb = putBytes(rb, 3, r.Data)
		rb = putBytes(rb, 4, putBytes(nil, 1, []byte("tagkey"))) // a tag, ignored
		body = putBytes(body, 3, rb)
	}
	sum := md5.Sum(body)
	out := append(append([]byte{}, kplMagic[:]...), body...)
	return append(out, sum[:]...)
}

func TestDeaggregate(t *testing.T) {
	in := []UserRecord{
		{PartitionKey: "alice", Data: []byte("one")},
		{PartitionKey: "bob", Data: []byte("two"), ExplicitHashKey: "170141183460469231731687303715884105728"},
		{PartitionKey: "alice", Data: []byte{}},
	}
	agg := aggregate([]string{"alice", "bob"}, []string{"170141183460469231731687303715884105728"}, in)
	got, ok := Deaggregate(agg)
	if !ok || len(got) != 3 {
		t.Fatalf("ok=%v got %d records", ok, len(got))
	}
	for i := range in {
		if got[i].PartitionKey != in[i].PartitionKey || !bytes.Equal(got[i].Data, in[i].Data) ||
			got[i].ExplicitHashKey != in[i].ExplicitHashKey || got[i].SubSequence != int64(i) {
			t.Errorf("record %d = %+v, want %+v", i, got[i], in[i])
		}
	}
}

func TestDeaggregatePassesThroughInvalid(t *testing.T) {
	good := aggregate([]string{"k"}, nil, []UserRecord{{PartitionKey: "k", Data: []byte("x")}})
	badSum := append([]byte{}, good...)
	badSum[len(badSum)-1] ^= 1
	badIndex := aggregate([]string{"k"}, nil, []UserRecord{{PartitionKey: "missing", Data: []byte("x")}})
	for name, b := range map[string][]byte{
		"plain":          []byte("hello world, plain record"),
		"magic only":     kplMagic[:],
		"magic + 16":     append(append([]byte{}, kplMagic[:]...), make([]byte, 16)...),
		"bad checksum":   badSum,
		"index too big":  badIndex,
		"no records":     aggregate([]string{"k"}, nil, nil),
		"truncated body": append(append([]byte{}, good[:8]...), good[len(good)-16:]...),
	} {
		if recs, ok := Deaggregate(b); ok {
			t.Errorf("%s: accepted as %d records", name, len(recs))
		}
	}
}

func FuzzDeaggregate(f *testing.F) {
	f.Add(aggregate([]string{"a", "b"}, []string{"1"}, []UserRecord{{PartitionKey: "a", Data: []byte("x")}, {PartitionKey: "b", ExplicitHashKey: "1", Data: []byte("yy")}}))
	f.Add([]byte("plain"))
	f.Add(append(append([]byte{}, kplMagic[:]...), make([]byte, 40)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, ok := Deaggregate(b)
		if !ok {
			return
		}
		if len(recs) == 0 {
			t.Fatal("ok with no records")
		}
		for i, r := range recs {
			if r.SubSequence != int64(i) {
				t.Fatalf("record %d has sub-sequence %d", i, r.SubSequence)
			}
		}
		// Re-encoding what we read must read back the same.
		keys := map[string]bool{}
		var kl []string
		for _, r := range recs {
			if !keys[r.PartitionKey] {
				keys[r.PartitionKey] = true
				kl = append(kl, r.PartitionKey)
			}
		}
		var el []string
		seen := map[string]bool{}
		for _, r := range recs {
			if r.ExplicitHashKey != "" && !seen[r.ExplicitHashKey] {
				seen[r.ExplicitHashKey] = true
				el = append(el, r.ExplicitHashKey)
			}
		}
		again, ok := Deaggregate(aggregate(kl, el, recs))
		if !ok || len(again) != len(recs) || fmt.Sprint(again) != fmt.Sprint(recs) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func gzipWriter(w io.Writer) *gzip.Writer { return gzip.NewWriter(w) }
