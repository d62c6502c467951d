package parity

import (
	"regexp"
	"strings"
)

// quirk is a documented way an emulator differs from AWS: on the lines of
// a scenario that match, the fake (which follows AWS) is not compared with
// that emulator.
type quirk struct {
	scenario, emulator string
	lines              *regexp.Regexp
	why                string
}

// quirks are the emulators' known differences from AWS that the parity
// suite sees (docs/KINESIS-NOTES.md has them too).
var quirks = []quirk{
	{"update shard count", "kinesalite", regexp.MustCompile(``),
		"kinesalite does not implement UpdateShardCount (UnknownOperationException)"},
	{"update shard count", "kinesis-mock", regexp.MustCompile(`^[0-9]`),
		"kinesis-mock's UpdateShardCount ranges end one below AWS's even layout (…862 for …863)"},
	{"bad input", "kinesis-mock", regexp.MustCompile(`^(split at the shard's first key|PutRecords of no records):`),
		"kinesis-mock accepts a split at a shard's first hash key and a PutRecords of no records; AWS refuses both"},
	{"consumers", "kinesis-mock", regexp.MustCompile(`^subscribe`),
		"kinesis-mock's SubscribeToShard sends no initial-response event, so the SDK cannot read its stream without a shim"},
}

// withoutQuirks drops from lines those a documented quirk of emulator
// makes differ from AWS in scenario.
func withoutQuirks(scenario, emulator string, lines []string) []string {
	var out []string
	for _, l := range lines {
		quirky := false
		for _, q := range quirks {
			if q.scenario == scenario && q.emulator == emulator && q.lines.MatchString(l) {
				quirky = true
			}
		}
		if !quirky {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}
