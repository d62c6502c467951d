package dynamo

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Service is an in-memory DynamoDB: tables with a hash key and an optional
// range key, and the calls the tool makes on them (see the package
// comment). Its methods have the SDK client's signatures, so it stands in
// for a client in process; Handler serves the same methods on the wire.
// The zero value is not usable: call New.
type Service struct {
	// Latency is added to every call (a benchmark's 5 ms a call).
	Latency time.Duration
	// Hook, when set, runs before every call with the operation's name; a
	// non-nil error is returned instead. It may block (a hung table) until
	// the call's context ends.
	Hook func(ctx context.Context, op string) error

	mu       sync.Mutex
	tables   map[string]*table
	calls    map[string]int
	inFlight atomic.Int64
	maxIn    atomic.Int64
}

// table is one table: its key schema and its items by encoded key.
type table struct {
	desc  types.TableDescription
	keys  []keyAttr // the hash key, then the range key if any
	items map[string]item
}

type keyAttr struct {
	name string
	typ  types.ScalarAttributeType
}

// New returns a service with no tables.
func New() *Service {
	return &Service{tables: map[string]*table{}, calls: map[string]int{}}
}

// Put stores an item as it is, with no condition and no call counted
// (setting a table up). It panics when the table is missing or the item
// lacks the table's key: a test's own mistake.
func (s *Service) Put(tableName string, it item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[tableName]
	if t == nil {
		panic(fmt.Sprintf("dynamo: Put into table %s, which does not exist", tableName))
	}
	k, err := t.itemKey(it)
	if err != nil {
		panic(fmt.Sprintf("dynamo: Put into table %s: %v", tableName, err))
	}
	t.items[k] = maps.Clone(it)
}

// Item returns a copy of the item whose key is the string key, in a table
// keyed by one string attribute (nil when absent).
func (s *Service) Item(tableName, key string) map[string]types.AttributeValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.tables[tableName]
	if t == nil || len(t.keys) != 1 {
		return nil
	}
	k, err := t.key(item{t.keys[0].name: &types.AttributeValueMemberS{Value: key}})
	if err != nil {
		return nil
	}
	return maps.Clone(t.items[k])
}

// MaxInFlight is the most calls that were in flight at once.
func (s *Service) MaxInFlight() int { return int(s.maxIn.Load()) }

// ResetMaxInFlight starts MaxInFlight again from the calls in flight now.
func (s *Service) ResetMaxInFlight() { s.maxIn.Store(s.inFlight.Load()) }

// Calls counts the calls of op, in process and on the wire.
func (s *Service) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// enter counts a call and runs the hook and the latency; done ends it.
func (s *Service) enter(ctx context.Context, op string) (func(), error) {
	n := s.inFlight.Add(1)
	for {
		m := s.maxIn.Load()
		if n <= m || s.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	done := func() { s.inFlight.Add(-1) }
	entered := false
	defer func() {
		// On an error, and on a panicking hook too: the call is over.
		if !entered {
			done()
		}
	}()
	s.mu.Lock()
	s.calls[op]++
	s.mu.Unlock()
	if s.Hook != nil {
		if err := s.Hook(ctx, op); err != nil {
			return nil, err
		}
	}
	if s.Latency > 0 {
		select {
		case <-time.After(s.Latency):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	entered = true
	return done, nil
}

// begin starts a call: enter, then the lock, held until end is called.
// Every call holds the lock to its end, so each is atomic, as one item's
// write is in the service.
func (s *Service) begin(ctx context.Context, op string) (end func(), err error) {
	done, err := s.enter(ctx, op)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	return func() { s.mu.Unlock(); done() }, nil
}

// table returns the named table; the caller holds the lock.
func (s *Service) table(name *string) (*table, error) {
	if err := checkTableName(name); err != nil {
		return nil, err
	}
	t := s.tables[*name]
	if t == nil {
		return nil, &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}
	}
	return t, nil
}

func checkTableName(name *string) error {
	switch n := aws.ToString(name); {
	case name == nil:
		return validation("1 validation error detected: Value null at 'tableName' failed to satisfy constraint: Member must not be null")
	case len(n) < 3 || len(n) > 255:
		return validation("1 validation error detected: Value '%s' at 'tableName' failed to satisfy constraint: Member must have length between 3 and 255", n)
	case strings.IndexFunc(n, func(r rune) bool { return !(r == '_' || r == '-' || r == '.' || r < 128 && isIdentPart(byte(r))) }) >= 0:
		return validation("1 validation error detected: Value '%s' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+", n)
	}
	return nil
}

// key encodes a Key parameter, which must hold the table's key
// attributes and nothing else.
func (t *table) key(k item) (string, error) {
	if len(k) != len(t.keys) {
		return "", validation("The provided key element does not match the schema")
	}
	return t.encode(k, func(string) error { return validation("The provided key element does not match the schema") })
}

// itemKey encodes the key of an item to write.
func (t *table) itemKey(it item) (string, error) {
	return t.encode(it, func(name string) error {
		return validation("One or more parameter values were invalid: Missing the key %s in the item", name)
	})
}

// encode is the key attributes' values as one string: the items' map key,
// whose order is the order of a Scan.
func (t *table) encode(it item, missing func(name string) error) (string, error) {
	parts := make([]string, len(t.keys))
	for i, k := range t.keys {
		v, ok := it[k.name]
		if !ok {
			return "", missing(k.name)
		}
		if got := typeName(v); got != string(k.typ) {
			return "", validation("One or more parameter values were invalid: Type mismatch for key %s expected: %s actual: %s", k.name, k.typ, got)
		}
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			if v.Value == "" {
				return "", validation("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty string value. Key: %s", k.name)
			}
			parts[i] = v.Value
		case *types.AttributeValueMemberN:
			if _, ok := number(v.Value); !ok {
				return "", validation("The parameter cannot be converted to a numeric value: %s", v.Value)
			}
			parts[i] = canonicalNumber(v.Value)
		case *types.AttributeValueMemberB:
			if len(v.Value) == 0 {
				return "", validation("One or more parameter values are not valid. The AttributeValue for a key attribute cannot contain an empty binary value. Key: %s", k.name)
			}
			parts[i] = string(v.Value)
		}
	}
	return strings.Join(parts, "\x00"), nil
}

// keyOf is the key attributes of an item (LastEvaluatedKey).
func (t *table) keyOf(it item) item {
	k := item{}
	for _, a := range t.keys {
		k[a.name] = it[a.name]
	}
	return k
}

// describe is the table's description now.
func (t *table) describe() *types.TableDescription {
	d := t.desc
	d.ItemCount = aws.Int64(int64(len(t.items)))
	d.KeySchema = slices.Clone(d.KeySchema)
	d.AttributeDefinitions = slices.Clone(d.AttributeDefinitions)
	return &d
}

// validation is the service's answer to a request it refuses.
func validation(format string, args ...any) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// served refuses a request that sets a member other than those listed:
// the fake serves those only, and one it ignored could change the answer
// (a FilterExpression, a ProjectionExpression).
func served(op string, in any, members ...string) error {
	v := reflect.ValueOf(in).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.IsExported() && !v.Field(i).IsZero() && !slices.Contains(members, f.Name) {
			return validation("%s.%s is not supported by this fake", op, f.Name)
		}
	}
	return nil
}
