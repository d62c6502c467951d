package cmd

import (
	"math"

	"github.com/kinesis-shards/kinesis-shards/internal/producer"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
)

// put's input formats (--format).
const (
	putFormatLines = producer.FormatLines // each line is a record's data
	putFormatJSON  = producer.FormatJSON  // each line is a `tail --format json` record
)

// validatePutInput checks --format, --rate and --rate-bytes (changed says
// whether a flag was given).
func validatePutInput(o *PutOptions, changed func(name string) bool) error {
	switch o.Format {
	case "":
		o.Format = putFormatLines
	case putFormatLines:
	case putFormatJSON:
		for _, fl := range []string{"key", "key-field"} {
			if changed(fl) {
				return usageErrorf("--%s does not go with --format json: each record brings its own partitionKey", fl)
			}
		}
	default:
		return usageErrorf("unknown --format %q: use %s", o.Format, text.OrList(enumNames("format", "put")))
	}
	if o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) {
		return usageErrorf("--rate must be a positive number of records per second")
	}
	if changed("rate") && o.Rate == 0 {
		return usageErrorf("--rate must be a positive number of records per second (leave it out for no cap)")
	}
	if changed("rate-bytes") {
		n, err := producer.ParseByteRate(o.RateBytesText)
		if err != nil {
			return usageErrorf("--rate-bytes: %v", err)
		}
		o.RateBytes = n
	}
	return nil
}
