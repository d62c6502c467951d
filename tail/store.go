package tail

import (
	"context"
	"maps"
	"sync"
	"time"
)

// Store keeps per-shard positions between runs. The local file is the
// first implementation; Save always receives every known position.
type Store interface {
	// Load returns the saved positions (empty for a new store).
	Load(ctx context.Context) (map[string]Position, error)
	// Save replaces the saved positions with these, atomically.
	Save(ctx context.Context, positions map[string]Position) error
	// Close releases the store (and its lock).
	Close() error
}

// StreamIdentity is what makes a checkpoint belong to one stream: a stream
// deleted and re-created under the same name gets the same ARN but a new
// creation time, and is another stream.
type StreamIdentity struct {
	Name    string
	ARN     string
	Created time.Time
}

// MemoryStore keeps positions in memory only (--no-checkpoint, tests).
type MemoryStore struct {
	mu    sync.Mutex
	saved map[string]Position
	saves int
}

// NewMemoryStore starts from the given positions (may be nil).
func NewMemoryStore(initial map[string]Position) *MemoryStore {
	return &MemoryStore{saved: maps.Clone(initial)}
}

// Load implements Store.
func (m *MemoryStore) Load(context.Context) (map[string]Position, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := maps.Clone(m.saved)
	if out == nil {
		out = map[string]Position{}
	}
	return out, nil
}

// Save implements Store.
func (m *MemoryStore) Save(_ context.Context, p map[string]Position) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saved = maps.Clone(p)
	m.saves++
	return nil
}

// Close implements Store.
func (m *MemoryStore) Close() error { return nil }

// Saved returns what was last saved.
func (m *MemoryStore) Saved() map[string]Position {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.saved)
}

// Saves counts the Save calls.
func (m *MemoryStore) Saves() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}
