package tail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kinesis-shards/kinesis-shards/internal/text"
)

// The checkpoint file format. Version 1:
//
//	{
//	  "kind": "kinesis-shards/checkpoint",
//	  "version": 1,
//	  "stream": "orders",
//	  "streamArn": "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
//	  "streamCreated": "2026-11-30T10:00:00Z",
//	  "updatedAt": "2026-11-30T10:05:00.123Z",
//	  "shards": {
//	    "shardId-000000000000": {"shardEnd": true},
//	    "shardId-000000000001": {"sequenceNumber": "4959..."},
//	    "shardId-000000000002": {"sequenceNumber": "4959...", "subSequenceNumber": 3}
//	  }
//	}
//
// subSequenceNumber is present only when the last delivered record came out
// of a KPL aggregate.
//
// Version 2 is version 1 plus "filter": {"key": "..."} or {"shard": "..."},
// the --key or --shard the file was written with, and the --filter and
// --jq expressions ("filter", "jq"): such a run records SHARD_END for the
// shards on its path, positions of its key's records only, and positions
// past the records its expressions dropped, so another run on the file
// would skip records. A file is refused by a run with another filter (or
// none). An unfiltered
// file is written as version 1 (readable by earlier builds); a filtered
// one as version 2, which earlier builds refuse rather than misread.
//
// Version 3 adds "logEventIndex" to a shard stopped inside a CloudWatch
// Logs batch (--cwlogs): the last log event written out of the batch the
// record (with subSequenceNumber, the user record) holds, which resume
// re-reads from the next event. Its filter is optional. A file is written
// as version 3 only while some shard is inside a batch: a build from
// before it would resume after the whole record and skip the rest of the
// batch, so it must refuse the file; every other file keeps version 1 or
// 2.
//
// Version 4 is a file whose filter holds --cwlogs or --decompress, which
// builds before them would ignore (and so accept the file for a run
// without them, the mistake the identity exists to stop): they refuse it.
// It may hold in-batch positions too.
const (
	fileKind            = "kinesis-shards/checkpoint"
	fileVersion         = 1
	fileVersionFiltered = 2
	fileVersionInBatch  = 3
	fileVersionOptions  = 4
)

// Filter is the identity of what a checkpoint file's run printed: the
// --key or --shard (at most one); the --filter and --jq expressions, whose
// positions move past the records they drop; and the options that change
// what an expression sees and what counts as one printed line: --cwlogs
// (a log event, with positions inside a batch) and --decompress (the
// payload unpacked). The output format is not part of it: it changes how
// a line looks, never which lines there are. The zero value is everything,
// as stored.
type Filter struct {
	Key        string `json:"key,omitempty"`        // a partition key
	Shard      string `json:"shard,omitempty"`      // a shard id
	Select     string `json:"filter,omitempty"`     // a --filter expression
	Transform  string `json:"jq,omitempty"`         // a --jq expression
	CWLogs     bool   `json:"cwlogs,omitempty"`     // --cwlogs
	Decompress bool   `json:"decompress,omitempty"` // --decompress
}

func (f Filter) String() string {
	var parts []string
	switch {
	case f.Key != "":
		parts = append(parts, "--key "+f.Key)
	case f.Shard != "":
		parts = append(parts, "--shard "+f.Shard)
	}
	if f.Select != "" {
		parts = append(parts, "--filter "+strconv.Quote(f.Select))
	}
	if f.Transform != "" {
		parts = append(parts, "--jq "+strconv.Quote(f.Transform))
	}
	if f.CWLogs {
		parts = append(parts, "--cwlogs")
	}
	if f.Decompress {
		parts = append(parts, "--decompress")
	}
	if len(parts) == 0 {
		return "none of --key, --shard, --filter, --jq, --cwlogs and --decompress"
	}
	return strings.Join(parts, " ")
}

// differs names the options in which f and g differ, in flag order.
func (f Filter) differs(g Filter) []string {
	var out []string
	for _, o := range []struct {
		name string
		same bool
	}{
		{"--key", f.Key == g.Key},
		{"--shard", f.Shard == g.Shard},
		{"--filter", f.Select == g.Select},
		{"--jq", f.Transform == g.Transform},
		{"--cwlogs", f.CWLogs == g.CWLogs},
		{"--decompress", f.Decompress == g.Decompress},
	} {
		if !o.same {
			out = append(out, o.name)
		}
	}
	return out
}

// valid: at most one of key and shard, and something.
func (f Filter) valid() bool {
	return !(f.Key != "" && f.Shard != "") && f != (Filter{})
}

// Errors a checkpoint file can be refused with. Each comes wrapped in a
// sentence that names the file.
var (
	ErrLocked  = errors.New("checkpoint file is in use")
	ErrForeign = errors.New("checkpoint file belongs to another stream")
	ErrCorrupt = errors.New("checkpoint file is not valid")
	// ErrFilter: the file was written with other options (Filter).
	ErrFilter = errors.New("checkpoint file was written with other options")
)

// LockedError says another process holds the checkpoint file.
type LockedError struct {
	Path string
	PID  int // 0 when unknown
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = fmt.Sprintf("another kinesis-shards (pid %d)", e.PID)
	}
	return fmt.Sprintf("checkpoint file %s is in use by %s; run one tail per checkpoint file", e.Path, holder)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

type fileDoc struct {
	Kind          string               `json:"kind"`
	Version       int                  `json:"version"`
	Stream        string               `json:"stream"`
	StreamARN     string               `json:"streamArn"`
	StreamCreated string               `json:"streamCreated"`
	UpdatedAt     string               `json:"updatedAt,omitempty"`
	Filter        *Filter              `json:"filter,omitempty"`
	Shards        map[string]fileShard `json:"shards"`
}

type fileShard struct {
	SequenceNumber    string `json:"sequenceNumber,omitempty"`
	SubSequenceNumber *int64 `json:"subSequenceNumber,omitempty"`
	LogEventIndex     *int64 `json:"logEventIndex,omitempty"`
	ShardEnd          bool   `json:"shardEnd,omitempty"`
}

// FileStore is a Store in a local JSON file: written atomically (temporary
// file, fsync, rename, fsync of the directory), private to the user (0600 in
// a 0700 directory), and locked with an advisory lock on FILE.lock, which
// the OS releases when the process dies, so a second tail is refused while
// the first runs and a killed tail never leaves a stale lock.
type FileStore struct {
	path   string
	id     StreamIdentity
	filter Filter
	lock   *os.File
	loaded map[string]Position
	now    func() time.Time
	// beforeRename runs between writing the temporary file and renaming it
	// (tests inject a crash there).
	beforeRename func(tmp string) error
}

// OpenFile opens (or prepares to create) the checkpoint file for a stream.
// It refuses, leaving the file untouched: a path that is a directory or not
// a regular file, a file it cannot read, a corrupt file, a file of another
// stream, and a file locked by another process. A file readable by others
// is tightened to 0600, with a warning through warn.
func OpenFile(path string, id StreamIdentity, warn func(string)) (*FileStore, error) {
	return OpenFilteredFile(path, id, Filter{}, warn)
}

// OpenFilteredFile is OpenFile for a run with --key, --shard, --filter or
// --jq: the file records the filter, and one written with another filter
// (or none) is refused, as is a filtered file by a run with none.
func OpenFilteredFile(path string, id StreamIdentity, filter Filter, warn func(string)) (*FileStore, error) {
	if path == "" {
		return nil, errors.New("no checkpoint file path")
	}
	if warn == nil {
		warn = func(string) {}
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("checkpoint file %s is a directory", path)
	case err == nil && !st.Mode().IsRegular():
		return nil, fmt.Errorf("checkpoint file %s is not a regular file", path)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("checkpoint file %s: %w", path, unwrapPathError(err))
	}
	exists := err == nil
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the checkpoint directory %s: %w", dir, unwrapPathError(err))
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	s := &FileStore{path: path, id: id, filter: filter, lock: lock, now: time.Now}
	if exists {
		loaded, err := readCheckpoint(path, id, filter)
		if err != nil {
			s.Close()
			return nil, err // refused: left exactly as it was, mode included
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				s.Close()
				return nil, fmt.Errorf("checkpoint file %s is readable by others and cannot be made private: %w", path, unwrapPathError(err))
			}
			warn(fmt.Sprintf("checkpoint file %s was readable by others (mode %04o); changed to 0600", path, st.Mode().Perm()))
		}
		s.loaded = loaded
	}
	s.removeStaleTemps()
	return s, nil
}

// Path is the file's path.
func (s *FileStore) Path() string { return s.path }

// Load implements Store.
func (s *FileStore) Load(context.Context) (map[string]Position, error) {
	out := make(map[string]Position, len(s.loaded))
	for k, v := range s.loaded {
		out[k] = v
	}
	return out, nil
}

// Save implements Store.
func (s *FileStore) Save(_ context.Context, positions map[string]Position) error {
	doc := fileDoc{
		Kind:          fileKind,
		Version:       fileVersion,
		Stream:        s.id.Name,
		StreamARN:     s.id.ARN,
		StreamCreated: formatCreated(s.id.Created),
		UpdatedAt:     s.now().UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		Shards:        make(map[string]fileShard, len(positions)),
	}
	if s.filter != (Filter{}) {
		f := s.filter
		doc.Version, doc.Filter = fileVersionFiltered, &f
	}
	for id, p := range positions {
		switch {
		case p.ShardEnd:
			doc.Shards[id] = fileShard{ShardEnd: true}
		case p.SequenceNumber != "":
			fsh := fileShard{SequenceNumber: p.SequenceNumber}
			if p.Aggregated {
				sub := p.SubSequence
				fsh.SubSequenceNumber = &sub
			}
			if p.InBatch {
				ev := p.LogEventIndex
				fsh.LogEventIndex = &ev
				doc.Version = fileVersionInBatch
			}
			doc.Shards[id] = fsh
		}
	}
	if s.filter.CWLogs || s.filter.Decompress {
		doc.Version = fileVersionOptions
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return s.writeAtomic(b)
}

func (s *FileStore) writeAtomic(b []byte) error {
	dir, base := filepath.Split(s.path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp") // 0600
	if err != nil {
		return fmt.Errorf("write checkpoint %s: %w", s.path, unwrapPathError(err))
	}
	tmpName := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmpName)
		return fmt.Errorf("write checkpoint %s: %w", s.path, unwrapPathError(err))
	}
	if _, err := tmp.Write(b); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	if s.beforeRename != nil {
		if err := s.beforeRename(tmpName); err != nil {
			return fmt.Errorf("write checkpoint %s: %w", s.path, err)
		}
	}
	if err := os.Rename(tmpName, s.path); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("write checkpoint %s: %w", s.path, unwrapPathError(err))
	}
	syncDir(dir)
	return nil
}

// removeStaleTemps deletes temporary files a crashed writer left behind.
// Only the lock holder writes them, and we hold the lock.
func (s *FileStore) removeStaleTemps() {
	dir, base := filepath.Split(s.path)
	if dir == "" {
		dir = "."
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(base)+".*.tmp"))
	for _, m := range matches {
		os.Remove(m)
	}
}

func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}

// Close implements Store: it releases the lock. The lock file stays (an
// empty file beside the checkpoint): removing it would let two processes
// lock two different files of the same name.
func (s *FileStore) Close() error {
	if s.lock == nil {
		return nil
	}
	err := unlockFile(s.lock)
	s.lock = nil
	return err
}

func readCheckpoint(path string, id StreamIdentity, filter Filter) (map[string]Position, error) {
	fileID, fileFilter, out, err := readCheckpointFile(path)
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return nil, fmt.Errorf("%w; it was left untouched (fix it, remove it, or use another --checkpoint)", err)
		}
		return nil, err
	}
	if fileID.ARN != id.ARN || !fileID.Created.Equal(id.Created) {
		return nil, fmt.Errorf("%w: %s is for %s (created %s), not for %s (created %s); a stream deleted and re-created under the same name is another stream: use another --checkpoint file or remove this one",
			ErrForeign, path, fileID.ARN, formatCreated(fileID.Created), id.ARN, formatCreated(id.Created))
	}
	if fileFilter != filter {
		d := fileFilter.differs(filter)
		verb := "differs"
		if len(d) > 1 {
			verb = "differ"
		}
		return nil, fmt.Errorf("%w: %s was written by a tail with %s, and this one has %s; %s %s, and a run that prints other records cannot resume from its positions: run with the file's options, or use another --checkpoint file",
			ErrFilter, path, fileFilter, filter, text.List(d, 0), verb)
	}
	return out, nil
}

// decodeCheckpoint parses and validates a checkpoint document (fuzzed).
func decodeCheckpoint(b []byte) (*fileDoc, error) {
	var doc fileDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not JSON (%v)", err)
	}
	if doc.Kind != fileKind {
		return nil, fmt.Errorf("not a kinesis-shards checkpoint (kind %q)", doc.Kind)
	}
	oneFilter := doc.Filter != nil && doc.Filter.valid()
	switch {
	case doc.Version == fileVersion && doc.Filter != nil:
		return nil, errors.New("a filter in a version 1 file")
	case doc.Version == fileVersionFiltered && !oneFilter:
		return nil, errors.New("a version 2 file needs a filter: a key or a shard (not both), expressions, --cwlogs or --decompress")
	case doc.Version == fileVersionInBatch && doc.Filter != nil && !oneFilter:
		return nil, errors.New("a filter needs a key or a shard (not both), expressions, --cwlogs or --decompress")
	case doc.Version == fileVersionOptions && (doc.Filter == nil || !doc.Filter.CWLogs && !doc.Filter.Decompress):
		return nil, errors.New("a version 4 file needs --cwlogs or --decompress in its filter")
	case doc.Version > fileVersionOptions:
		return nil, fmt.Errorf("version %d is newer than this kinesis-shards understands (%d)", doc.Version, fileVersionOptions)
	case doc.Version < fileVersion:
		return nil, fmt.Errorf("unknown version %d", doc.Version)
	}
	if doc.StreamARN == "" {
		return nil, errors.New("no streamArn")
	}
	if _, err := time.Parse(time.RFC3339Nano, doc.StreamCreated); err != nil {
		return nil, fmt.Errorf("streamCreated %q is not an RFC 3339 time", doc.StreamCreated)
	}
	for shard, f := range doc.Shards {
		if shard == "" || len(shard) > 128 {
			return nil, fmt.Errorf("bad shard id %q", shard)
		}
		switch {
		case f.ShardEnd && (f.SequenceNumber != "" || f.SubSequenceNumber != nil):
			return nil, fmt.Errorf("shard %s is both at SHARD_END and at a sequence number", shard)
		case f.ShardEnd && f.LogEventIndex != nil:
			return nil, fmt.Errorf("shard %s is both at SHARD_END and inside a batch", shard)
		case f.ShardEnd:
		case !validSequence(f.SequenceNumber):
			return nil, fmt.Errorf("shard %s: %q is not a sequence number", shard, f.SequenceNumber)
		case f.SubSequenceNumber != nil && *f.SubSequenceNumber < 0:
			return nil, fmt.Errorf("shard %s: negative subSequenceNumber", shard)
		case f.LogEventIndex != nil && doc.Version != fileVersionInBatch && doc.Version != fileVersionOptions:
			return nil, fmt.Errorf("shard %s: logEventIndex in a version %d file", shard, doc.Version)
		case f.LogEventIndex != nil && *f.LogEventIndex < 0:
			return nil, fmt.Errorf("shard %s: negative logEventIndex", shard)
		}
	}
	return &doc, nil
}

func formatCreated(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// unwrapPathError drops the path from an *fs.PathError: our messages name
// the file already.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ReadCheckpoint reads a checkpoint file without locking it, for showing
// positions (the dashboard) while a tail may be running. The file's stream
// identity is returned for the caller to compare.
func ReadCheckpoint(path string) (StreamIdentity, map[string]Position, error) {
	id, _, out, err := readCheckpointFile(path)
	return id, out, err
}

// ReadCheckpointFilter is ReadCheckpoint with the filter the file was
// written with (kinesis-shards lag).
func ReadCheckpointFilter(path string) (StreamIdentity, Filter, map[string]Position, error) {
	return readCheckpointFile(path)
}

func readCheckpointFile(path string) (StreamIdentity, Filter, map[string]Position, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return StreamIdentity{}, Filter{}, nil, fmt.Errorf("cannot read checkpoint file %s: %w", path, unwrapPathError(err))
	}
	doc, err := decodeCheckpoint(b)
	if err != nil {
		return StreamIdentity{}, Filter{}, nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	var filter Filter
	if doc.Filter != nil {
		filter = *doc.Filter
	}
	created, _ := time.Parse(time.RFC3339Nano, doc.StreamCreated)
	id := StreamIdentity{Name: doc.Stream, ARN: doc.StreamARN, Created: created}
	out := make(map[string]Position, len(doc.Shards))
	for shard, f := range doc.Shards {
		p := Position{SequenceNumber: f.SequenceNumber, ShardEnd: f.ShardEnd}
		if f.SubSequenceNumber != nil {
			p.Aggregated, p.SubSequence = true, *f.SubSequenceNumber
		}
		if f.LogEventIndex != nil {
			p.InBatch, p.LogEventIndex = true, *f.LogEventIndex
		}
		out[shard] = p
	}
	return id, filter, out, nil
}
