package leasestest

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MemTable is an in-memory DynamoDB holding lease tables, for tests and
// benchmarks that need no emulator: Scan, PutItem, UpdateItem,
// DescribeTable and CreateTable, with the expressions the lease worker
// writes (SET with +, if_not_exists; REMOVE; conditions joined by AND of
// =, <>, attribute_exists and attribute_not_exists, and parenthesised
// terms joined by OR). It is not a DynamoDB:
// anything else is an error.
type MemTable struct {
	// Latency is added to every call (the benchmark's 5 ms a call).
	Latency time.Duration
	// Hook, when set, runs before every call with the operation's name; a
	// non-nil error is returned instead. It may block (a hung table) until
	// the call's context ends.
	Hook func(ctx context.Context, op string) error

	mu       sync.Mutex
	tables   map[string]map[string]map[string]types.AttributeValue // table -> leaseKey -> item
	inFlight atomic.Int64
	maxIn    atomic.Int64
	calls    map[string]int
}

// NewMemTable returns an empty store.
func NewMemTable() *MemTable {
	return &MemTable{tables: map[string]map[string]map[string]types.AttributeValue{}, calls: map[string]int{}}
}

// Put stores an item as it is (setting a table up).
func (m *MemTable) Put(table string, item map[string]types.AttributeValue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(table)
	t[item["leaseKey"].(*types.AttributeValueMemberS).Value] = maps.Clone(item)
}

// Item returns a copy of the item with that key (nil when absent).
func (m *MemTable) Item(table, key string) map[string]types.AttributeValue {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.tables[table][key])
}

// MaxInFlight is the most calls that were in flight at once.
func (m *MemTable) MaxInFlight() int { return int(m.maxIn.Load()) }

// ResetMaxInFlight starts MaxInFlight again from the calls in flight now.
func (m *MemTable) ResetMaxInFlight() { m.maxIn.Store(m.inFlight.Load()) }

// Calls counts the calls of op.
func (m *MemTable) Calls(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[op]
}

func (m *MemTable) table(name string) map[string]map[string]types.AttributeValue {
	t := m.tables[name]
	if t == nil {
		t = map[string]map[string]types.AttributeValue{}
		m.tables[name] = t
	}
	return t
}

// enter runs the hook and the latency of a call.
func (m *MemTable) enter(ctx context.Context, op string) (func(), error) {
	n := m.inFlight.Add(1)
	for {
		max := m.maxIn.Load()
		if n <= max || m.maxIn.CompareAndSwap(max, n) {
			break
		}
	}
	done := func() { m.inFlight.Add(-1) }
	m.mu.Lock()
	m.calls[op]++
	m.mu.Unlock()
	if m.Hook != nil {
		if err := m.Hook(ctx, op); err != nil {
			done()
			return nil, err
		}
	}
	if m.Latency > 0 {
		select {
		case <-time.After(m.Latency):
		case <-ctx.Done():
			done()
			return nil, ctx.Err()
		}
	}
	return done, nil
}

// begin starts a call on a table: the hook and latency, then the lock,
// held until end is called.
func (m *MemTable) begin(ctx context.Context, op string, table *string) (map[string]map[string]types.AttributeValue, func(), error) {
	done, err := m.enter(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	end := func() { m.mu.Unlock(); done() }
	t, ok := m.tables[aws.ToString(table)]
	if !ok {
		end()
		return nil, nil, &types.ResourceNotFoundException{Message: aws.String("Requested resource not found")}
	}
	return t, end, nil
}

// Scan implements the call: every item in one page.
func (m *MemTable) Scan(ctx context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	t, end, err := m.begin(ctx, "Scan", in.TableName)
	if err != nil {
		return nil, err
	}
	defer end()
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := &dynamodb.ScanOutput{}
	for _, k := range keys {
		out.Items = append(out.Items, maps.Clone(t[k]))
	}
	return out, nil
}

// PutItem implements the call.
func (m *MemTable) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	t, end, err := m.begin(ctx, "PutItem", in.TableName)
	if err != nil {
		return nil, err
	}
	defer end()
	key := in.Item["leaseKey"].(*types.AttributeValueMemberS).Value
	if in.ConditionExpression != nil {
		ok, err := condition(aws.ToString(in.ConditionExpression), t[key], in.ExpressionAttributeValues)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		}
	}
	t[key] = maps.Clone(in.Item)
	return &dynamodb.PutItemOutput{}, nil
}

// UpdateItem implements the call.
func (m *MemTable) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	t, end, err := m.begin(ctx, "UpdateItem", in.TableName)
	if err != nil {
		return nil, err
	}
	defer end()
	key := in.Key["leaseKey"].(*types.AttributeValueMemberS).Value
	item := t[key]
	if in.ConditionExpression != nil {
		ok, err := condition(aws.ToString(in.ConditionExpression), item, in.ExpressionAttributeValues)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
		}
	}
	next := maps.Clone(item)
	if next == nil {
		next = map[string]types.AttributeValue{"leaseKey": &types.AttributeValueMemberS{Value: key}}
	}
	if err := update(aws.ToString(in.UpdateExpression), item, next, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	t[key] = next
	return &dynamodb.UpdateItemOutput{Attributes: maps.Clone(next)}, nil
}

// DescribeTable implements the call.
func (m *MemTable) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	_, end, err := m.begin(ctx, "DescribeTable", in.TableName)
	if err != nil {
		return nil, err
	}
	defer end()
	return &dynamodb.DescribeTableOutput{Table: &types.TableDescription{
		TableName:   in.TableName,
		TableStatus: types.TableStatusActive,
		KeySchema:   []types.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: types.KeyTypeHash}},
	}}, nil
}

// CreateTable implements the call.
func (m *MemTable) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	done, err := m.enter(ctx, "CreateTable")
	if err != nil {
		return nil, err
	}
	defer done()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tables[aws.ToString(in.TableName)]; ok {
		return nil, &types.ResourceInUseException{Message: aws.String("Table already exists")}
	}
	m.table(aws.ToString(in.TableName))
	return &dynamodb.CreateTableOutput{}, nil
}

// condition evaluates "c AND c ...".
func condition(expr string, item map[string]types.AttributeValue, vals map[string]types.AttributeValue) (bool, error) {
	for _, c := range strings.Split(expr, " AND ") {
		c = strings.TrimSpace(c)
		if strings.HasPrefix(c, "(") && strings.HasSuffix(c, ")") {
			// A parenthesised "x OR y": any of its terms.
			any := false
			for _, term := range strings.Split(c[1:len(c)-1], " OR ") {
				ok, err := condition(term, item, vals)
				if err != nil {
					return false, err
				}
				any = any || ok
			}
			if !any {
				return false, nil
			}
			continue
		}
		var ok bool
		switch {
		case strings.HasPrefix(c, "attribute_exists(") && strings.HasSuffix(c, ")"):
			_, ok = item[c[len("attribute_exists("):len(c)-1]]
		case strings.HasPrefix(c, "attribute_not_exists(") && strings.HasSuffix(c, ")"):
			_, has := item[c[len("attribute_not_exists("):len(c)-1]]
			ok = !has
		case strings.Contains(c, "<>"):
			l, r, _ := strings.Cut(c, "<>")
			ok = !equal(item[strings.TrimSpace(l)], vals[strings.TrimSpace(r)])
		case strings.Contains(c, "="):
			l, r, _ := strings.Cut(c, "=")
			ok = equal(item[strings.TrimSpace(l)], vals[strings.TrimSpace(r)])
		default:
			return false, fmt.Errorf("memtable: condition %q not understood", c)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

func equal(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	}
	return false
}

// update applies "SET a = x, b = y + z REMOVE c, d" (either clause first).
func update(expr string, old, next map[string]types.AttributeValue, vals map[string]types.AttributeValue) error {
	words := strings.Fields(expr)
	var clause string
	var parts []string
	flush := func() error {
		if len(parts) == 0 {
			return nil
		}
		body := strings.Join(parts, " ")
		parts = nil
		for _, a := range splitTop(body) {
			a = strings.TrimSpace(a)
			switch clause {
			case "REMOVE":
				delete(next, a)
			case "SET":
				path, value, ok := strings.Cut(a, "=")
				if !ok {
					return fmt.Errorf("memtable: SET %q not understood", a)
				}
				v, err := value2(strings.TrimSpace(value), old, vals)
				if err != nil {
					return err
				}
				next[strings.TrimSpace(path)] = v
			}
		}
		return nil
	}
	for _, w := range words {
		if w == "SET" || w == "REMOVE" {
			if err := flush(); err != nil {
				return err
			}
			clause = w
			continue
		}
		parts = append(parts, w)
	}
	return flush()
}

// splitTop splits on commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// value2 evaluates "x" or "x + y".
func value2(s string, item map[string]types.AttributeValue, vals map[string]types.AttributeValue) (types.AttributeValue, error) {
	l, r, plus := strings.Cut(s, "+")
	a, err := operand(strings.TrimSpace(l), item, vals)
	if err != nil || !plus {
		return a, err
	}
	b, err := operand(strings.TrimSpace(r), item, vals)
	if err != nil {
		return nil, err
	}
	an, ok1 := a.(*types.AttributeValueMemberN)
	bn, ok2 := b.(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("memtable: %q adds non-numbers", s)
	}
	x, _ := strconv.ParseInt(an.Value, 10, 64)
	y, _ := strconv.ParseInt(bn.Value, 10, 64)
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(x+y, 10)}, nil
}

func operand(s string, item map[string]types.AttributeValue, vals map[string]types.AttributeValue) (types.AttributeValue, error) {
	switch {
	case strings.HasPrefix(s, ":"):
		if v, ok := vals[s]; ok {
			return v, nil
		}
	case strings.HasPrefix(s, "if_not_exists(") && strings.HasSuffix(s, ")"):
		path, def, _ := strings.Cut(s[len("if_not_exists("):len(s)-1], ",")
		if v, ok := item[strings.TrimSpace(path)]; ok {
			return v, nil
		}
		return operand(strings.TrimSpace(def), item, vals)
	default:
		if v, ok := item[s]; ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("memtable: operand %q has no value", s)
}
