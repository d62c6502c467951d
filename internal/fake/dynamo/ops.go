package dynamo

import (
	"context"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The operations, with the SDK client's signatures. Each checks its
// request as the service does (the messages are the service's), holds
// the lock to its end, and answers with the service's errors:
// ResourceNotFoundException, ResourceInUseException,
// ConditionalCheckFailedException and ValidationException.

// CreateTable implements the call. The table is ACTIVE at once.
func (s *Service) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	end, err := s.begin(ctx, "CreateTable")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("CreateTable", in, "TableName", "KeySchema", "AttributeDefinitions", "BillingMode", "ProvisionedThroughput"); err != nil {
		return nil, err
	}
	if err := checkTableName(in.TableName); err != nil {
		return nil, err
	}
	keys, err := keySchema(in.KeySchema, in.AttributeDefinitions)
	if err != nil {
		return nil, err
	}
	throughput := &types.ProvisionedThroughputDescription{ReadCapacityUnits: aws.Int64(0), WriteCapacityUnits: aws.Int64(0), NumberOfDecreasesToday: aws.Int64(0)}
	var billing *types.BillingModeSummary
	pt := in.ProvisionedThroughput
	switch in.BillingMode {
	case "", types.BillingModeProvisioned:
		if pt == nil || aws.ToInt64(pt.ReadCapacityUnits) < 1 || aws.ToInt64(pt.WriteCapacityUnits) < 1 {
			return nil, validation("One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
		}
		throughput.ReadCapacityUnits, throughput.WriteCapacityUnits = pt.ReadCapacityUnits, pt.WriteCapacityUnits
	case types.BillingModePayPerRequest:
		if pt != nil {
			return nil, validation("One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
		}
		billing = &types.BillingModeSummary{BillingMode: types.BillingModePayPerRequest}
	default:
		return nil, validation("1 validation error detected: Value '%s' at 'billingMode' failed to satisfy constraint: Member must satisfy enum value set: [PROVISIONED, PAY_PER_REQUEST]", in.BillingMode)
	}
	name := aws.ToString(in.TableName)
	if _, ok := s.tables[name]; ok {
		return nil, &types.ResourceInUseException{Message: aws.String("Table already exists: " + name)}
	}
	t := &table{keys: keys, items: map[string]item{}, desc: types.TableDescription{
		TableName:             aws.String(name),
		TableArn:              aws.String("arn:aws:dynamodb:us-east-1:123456789012:table/" + name),
		TableStatus:           types.TableStatusActive,
		KeySchema:             slices.Clone(in.KeySchema),
		AttributeDefinitions:  slices.Clone(in.AttributeDefinitions),
		CreationDateTime:      aws.Time(time.Now()),
		TableSizeBytes:        aws.Int64(0),
		ProvisionedThroughput: throughput,
		BillingModeSummary:    billing,
	}}
	s.tables[name] = t
	return &dynamodb.CreateTableOutput{TableDescription: t.describe()}, nil
}

// keySchema checks a new table's key: a hash key, then perhaps a range
// key, each defined as S, N or B, and no other attribute defined.
func keySchema(ks []types.KeySchemaElement, defs []types.AttributeDefinition) ([]keyAttr, error) {
	switch {
	case len(ks) == 0:
		return nil, validation("1 validation error detected: Value null at 'keySchema' failed to satisfy constraint: Member must not be null")
	case len(ks) > 2:
		return nil, validation("1 validation error detected: Value '%d elements' at 'keySchema' failed to satisfy constraint: Member must have length less than or equal to 2", len(ks))
	case ks[0].KeyType != types.KeyTypeHash:
		return nil, validation("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
	case len(ks) == 2 && ks[1].KeyType != types.KeyTypeRange:
		return nil, validation("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
	case len(ks) == 2 && aws.ToString(ks[0].AttributeName) == aws.ToString(ks[1].AttributeName):
		return nil, validation("Both the Hash Key and the Range Key element in the KeySchema have the same name")
	}
	typeOf := map[string]types.ScalarAttributeType{}
	for _, d := range defs {
		switch d.AttributeType {
		case types.ScalarAttributeTypeS, types.ScalarAttributeTypeN, types.ScalarAttributeTypeB:
		default:
			return nil, validation("1 validation error detected: Value '%s' at 'attributeDefinitions.member.attributeType' failed to satisfy constraint: Member must satisfy enum value set: [B, N, S]", d.AttributeType)
		}
		typeOf[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	var keys []keyAttr
	for _, k := range ks {
		name := aws.ToString(k.AttributeName)
		typ, ok := typeOf[name]
		if !ok {
			return nil, validation("One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s]", name)
		}
		keys = append(keys, keyAttr{name, typ})
	}
	if len(defs) != len(ks) {
		return nil, validation("One or more parameter values were invalid: Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions")
	}
	return keys, nil
}

// DescribeTable implements the call.
func (s *Service) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	end, err := s.begin(ctx, "DescribeTable")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("DescribeTable", in, "TableName"); err != nil {
		return nil, err
	}
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	return &dynamodb.DescribeTableOutput{Table: t.describe()}, nil
}

// ListTables implements the call: names in order, Limit (at most 100) a
// page.
func (s *Service) ListTables(ctx context.Context, in *dynamodb.ListTablesInput, _ ...func(*dynamodb.Options)) (*dynamodb.ListTablesOutput, error) {
	end, err := s.begin(ctx, "ListTables")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("ListTables", in, "ExclusiveStartTableName", "Limit"); err != nil {
		return nil, err
	}
	limit := int(aws.ToInt32(in.Limit))
	switch {
	case in.Limit == nil:
		limit = 100
	case limit < 1 || limit > 100:
		return nil, validation("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value between 1 and 100", limit)
	}
	names := slices.Sorted(maps.Keys(s.tables))
	if in.ExclusiveStartTableName != nil {
		names = names[sort.SearchStrings(names, *in.ExclusiveStartTableName+"\x00"):]
	}
	out := &dynamodb.ListTablesOutput{TableNames: []string{}}
	if len(names) > limit {
		names = names[:limit]
		out.LastEvaluatedTableName = aws.String(names[limit-1])
	}
	out.TableNames = append(out.TableNames, names...)
	return out, nil
}

// DeleteTable implements the call: the table is gone at once.
func (s *Service) DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error) {
	end, err := s.begin(ctx, "DeleteTable")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("DeleteTable", in, "TableName"); err != nil {
		return nil, err
	}
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	delete(s.tables, *in.TableName)
	d := t.describe()
	d.TableStatus = types.TableStatusDeleting
	return &dynamodb.DeleteTableOutput{TableDescription: d}, nil
}

// writeMembers are the members of PutItem, UpdateItem and DeleteItem the
// fake serves besides the key and the expressions.
var writeMembers = []string{"TableName", "ConditionExpression", "ExpressionAttributeNames", "ExpressionAttributeValues", "ReturnValues", "ReturnConsumedCapacity", "ReturnItemCollectionMetrics"}

// PutItem implements the call.
func (s *Service) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	end, err := s.begin(ctx, "PutItem")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("PutItem", in, append(writeMembers, "Item")...); err != nil {
		return nil, err
	}
	if err := oldOnly(in.ReturnValues); err != nil {
		return nil, err
	}
	cond, err := parseCondition(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	if err := checkItem(in.Item); err != nil {
		return nil, err
	}
	k, err := t.itemKey(in.Item)
	if err != nil {
		return nil, err
	}
	old := t.items[k]
	if !cond(old) {
		return nil, conditionFailed()
	}
	t.items[k] = maps.Clone(in.Item)
	out := &dynamodb.PutItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = maps.Clone(old)
	}
	return out, nil
}

// GetItem implements the call (every read is consistent).
func (s *Service) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	end, err := s.begin(ctx, "GetItem")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("GetItem", in, "TableName", "Key", "ConsistentRead", "ReturnConsumedCapacity"); err != nil {
		return nil, err
	}
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	k, err := t.key(in.Key)
	if err != nil {
		return nil, err
	}
	return &dynamodb.GetItemOutput{Item: maps.Clone(t.items[k])}, nil
}

// UpdateItem implements the call: an item that does not exist is created
// from its key, as the service does.
func (s *Service) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	end, err := s.begin(ctx, "UpdateItem")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("UpdateItem", in, append(writeMembers, "Key", "UpdateExpression")...); err != nil {
		return nil, err
	}
	switch in.ReturnValues {
	case "", types.ReturnValueNone, types.ReturnValueAllOld, types.ReturnValueUpdatedOld, types.ReturnValueAllNew, types.ReturnValueUpdatedNew:
	default:
		return nil, validation("1 validation error detected: Value '%s' at 'returnValues' failed to satisfy constraint: Member must satisfy enum value set: [ALL_NEW, UPDATED_OLD, ALL_OLD, NONE, UPDATED_NEW]", in.ReturnValues)
	}
	x, err := newExprs(in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	upd := &updateExpr{}
	if in.UpdateExpression != nil {
		if upd, err = x.update(*in.UpdateExpression); err != nil {
			return nil, err
		}
	}
	cond, err := x.condition(in.ConditionExpression)
	if err != nil {
		return nil, err
	}
	if err := x.unused(); err != nil {
		return nil, err
	}
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	k, err := t.key(in.Key)
	if err != nil {
		return nil, err
	}
	for _, p := range upd.paths {
		for _, ka := range t.keys {
			if p == ka.name {
				return nil, validation("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", p)
			}
		}
	}
	old := t.items[k]
	if !cond(old) {
		return nil, conditionFailed()
	}
	next := maps.Clone(old)
	if next == nil {
		next = maps.Clone(in.Key)
	}
	if err := upd.apply(old, next); err != nil {
		return nil, err
	}
	t.items[k] = next
	out := &dynamodb.UpdateItemOutput{}
	switch in.ReturnValues {
	case types.ReturnValueAllOld:
		out.Attributes = maps.Clone(old)
	case types.ReturnValueAllNew:
		out.Attributes = maps.Clone(next)
	case types.ReturnValueUpdatedOld:
		out.Attributes = pick(old, upd.paths)
	case types.ReturnValueUpdatedNew:
		out.Attributes = pick(next, upd.paths)
	}
	return out, nil
}

// pick is the named attributes the item has (nil: none).
func pick(it item, names []string) item {
	var out item
	for _, n := range names {
		if v, ok := it[n]; ok {
			if out == nil {
				out = item{}
			}
			out[n] = v
		}
	}
	return out
}

// DeleteItem implements the call.
func (s *Service) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	end, err := s.begin(ctx, "DeleteItem")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("DeleteItem", in, append(writeMembers, "Key")...); err != nil {
		return nil, err
	}
	if err := oldOnly(in.ReturnValues); err != nil {
		return nil, err
	}
	cond, err := parseCondition(in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	if err != nil {
		return nil, err
	}
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	k, err := t.key(in.Key)
	if err != nil {
		return nil, err
	}
	old := t.items[k]
	if !cond(old) {
		return nil, conditionFailed()
	}
	delete(t.items, k)
	out := &dynamodb.DeleteItemOutput{}
	if in.ReturnValues == types.ReturnValueAllOld {
		out.Attributes = old
	}
	return out, nil
}

// Scan implements the call: items in key order, Limit a page. As in the
// service, a page that stops at Limit has a LastEvaluatedKey even when no
// item is left, so the next page can be empty; there is no 1 MB cap on a
// page.
func (s *Service) Scan(ctx context.Context, in *dynamodb.ScanInput, _ ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	end, err := s.begin(ctx, "Scan")
	if err != nil {
		return nil, err
	}
	defer end()
	if err := served("Scan", in, "TableName", "ConsistentRead", "ExclusiveStartKey", "Limit", "ReturnConsumedCapacity"); err != nil {
		return nil, err
	}
	if in.Limit != nil && *in.Limit < 1 {
		return nil, validation("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *in.Limit)
	}
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	keys := slices.Sorted(maps.Keys(t.items))
	if in.ExclusiveStartKey != nil {
		start, err := t.key(in.ExclusiveStartKey)
		if err != nil {
			return nil, validation("The provided starting key is invalid: The provided key element does not match the schema")
		}
		keys = keys[sort.SearchStrings(keys, start+"\x00"):]
	}
	out := &dynamodb.ScanOutput{Items: []map[string]types.AttributeValue{}}
	if in.Limit != nil && len(keys) >= int(*in.Limit) {
		keys = keys[:*in.Limit]
		out.LastEvaluatedKey = t.keyOf(t.items[keys[len(keys)-1]])
	}
	for _, k := range keys {
		out.Items = append(out.Items, maps.Clone(t.items[k]))
	}
	out.Count, out.ScannedCount = int32(len(out.Items)), int32(len(out.Items))
	return out, nil
}

// parseCondition parses the condition of a PutItem or DeleteItem, the
// request's only expression.
func parseCondition(expr *string, names map[string]string, values map[string]types.AttributeValue) (condFn, error) {
	x, err := newExprs(names, values)
	if err != nil {
		return nil, err
	}
	cond, err := x.condition(expr)
	if err != nil {
		return nil, err
	}
	return cond, x.unused()
}

// oldOnly checks the ReturnValues of PutItem and DeleteItem.
func oldOnly(rv types.ReturnValue) error {
	switch rv {
	case "", types.ReturnValueNone, types.ReturnValueAllOld:
		return nil
	}
	return validation("ReturnValues can only be ALL_OLD or NONE")
}

func conditionFailed() error {
	return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
}
