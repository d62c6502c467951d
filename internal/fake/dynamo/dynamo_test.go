package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/kinesis-shards/kinesis-shards/internal/fake/dynamo"
)

// Every test talks to the service through the SDK's own client, on a
// loopback port (or through Transport), so what is checked is what a
// client of the real service would read.

func options(endpoint string) dynamodb.Options {
	return dynamodb.Options{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		BaseEndpoint: aws.String(endpoint),
		Retryer:      aws.NopRetryer{}, // an error is the test's answer, not a reason to wait
	}
}

// serve starts the service on a port and returns a client for it.
func serve(t *testing.T, s *dynamo.Service) (*dynamodb.Client, string) {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return dynamodb.New(options(srv.URL)), srv.URL
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// createLeases creates a table keyed like a lease table.
func createLeases(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// createPairs creates a table with a string hash key and a number range
// key, on provisioned capacity.
func createPairs(t *testing.T, c *dynamodb.Client, name string) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// wantCode fails unless err is an API error with that code and a message
// holding msg.
func wantCode(t *testing.T, err error, code, msg string) {
	t.Helper()
	var api smithy.APIError
	if !errors.As(err, &api) {
		t.Fatalf("error %v, want %s", err, code)
	}
	if api.ErrorCode() != code || !strings.Contains(api.ErrorMessage(), msg) {
		t.Fatalf("error %s: %q, want %s: …%s…", api.ErrorCode(), api.ErrorMessage(), code, msg)
	}
}

func TestTables(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, dynamo.New())
	createLeases(t, c, "leases")
	createPairs(t, c, "pairs")

	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("leases"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if !errors.As(err, &inUse) {
		t.Fatalf("creating an existing table: %v, want ResourceInUseException", err)
	}

	// ACTIVE at once, as the waiter of leases.CreateTable expects.
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("pairs")}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("pairs")})
	if err != nil {
		t.Fatal(err)
	}
	tab := d.Table
	if tab.TableStatus != types.TableStatusActive || len(tab.KeySchema) != 2 || aws.ToString(tab.KeySchema[1].AttributeName) != "sk" ||
		tab.KeySchema[1].KeyType != types.KeyTypeRange || aws.ToInt64(tab.ProvisionedThroughput.ReadCapacityUnits) != 5 ||
		aws.ToString(tab.TableArn) != "arn:aws:dynamodb:us-east-1:123456789012:table/pairs" || aws.ToInt64(tab.ItemCount) != 0 {
		t.Fatalf("pairs described as %+v", tab)
	}
	d, _ = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("leases")})
	if d.Table.BillingModeSummary == nil || d.Table.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Fatalf("leases described without its billing mode: %+v", d.Table)
	}

	createLeases(t, c, "more")
	var names []string
	pages := 0
	p := dynamodb.NewListTablesPaginator(c, &dynamodb.ListTablesInput{Limit: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, page.TableNames...)
		pages++
	}
	if !slices.Equal(names, []string{"leases", "more", "pairs"}) || pages != 2 {
		t.Fatalf("ListTables in pages of 2: %v in %d pages", names, pages)
	}

	del, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("pairs")})
	if err != nil || del.TableDescription.TableStatus != types.TableStatusDeleting {
		t.Fatalf("DeleteTable: %v, %+v", err, del)
	}
	var notFound *types.ResourceNotFoundException
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("pairs")}); !errors.As(err, &notFound) {
		t.Fatalf("DescribeTable of a deleted table: %v", err)
	}
	if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("pairs")}); !errors.As(err, &notFound) {
		t.Fatalf("DeleteTable of a deleted table: %v", err)
	}
	key := map[string]types.AttributeValue{"pk": s("a"), "sk": n("1")}
	for name, call := range map[string]func() error{
		"PutItem": func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("pairs"), Item: key})
			return err
		},
		"GetItem": func() error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("pairs"), Key: key})
			return err
		},
		"UpdateItem": func() error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("pairs"), Key: key})
			return err
		},
		"DeleteItem": func() error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("pairs"), Key: key})
			return err
		},
		"Scan": func() error {
			_, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("pairs")})
			return err
		},
	} {
		if err := call(); !errors.As(err, &notFound) || !strings.Contains(err.Error(), "Requested resource not found") {
			t.Errorf("%s on a deleted table: %v, want ResourceNotFoundException", name, err)
		}
	}
}

func TestCreateTableRefused(t *testing.T) {
	c, _ := serve(t, dynamo.New())
	hash := types.KeySchemaElement{AttributeName: aws.String("k"), KeyType: types.KeyTypeHash}
	def := types.AttributeDefinition{AttributeName: aws.String("k"), AttributeType: types.ScalarAttributeTypeS}
	for _, tc := range []struct {
		name string
		in   dynamodb.CreateTableInput
		want string
	}{
		{"short name", dynamodb.CreateTableInput{TableName: aws.String("ab"), KeySchema: []types.KeySchemaElement{hash}, AttributeDefinitions: []types.AttributeDefinition{def}, BillingMode: types.BillingModePayPerRequest},
			"length between 3 and 255"},
		{"bad name", dynamodb.CreateTableInput{TableName: aws.String("a b/c"), KeySchema: []types.KeySchemaElement{hash}, AttributeDefinitions: []types.AttributeDefinition{def}, BillingMode: types.BillingModePayPerRequest},
			"regular expression pattern"},
		{"no key", dynamodb.CreateTableInput{TableName: aws.String("tab1"), AttributeDefinitions: []types.AttributeDefinition{def}, BillingMode: types.BillingModePayPerRequest},
			"Value null at 'keySchema'"},
		{"range first", dynamodb.CreateTableInput{TableName: aws.String("tab1"), KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("k"), KeyType: types.KeyTypeRange}}, AttributeDefinitions: []types.AttributeDefinition{def}, BillingMode: types.BillingModePayPerRequest},
			"not a HASH key type"},
		{"undefined key", dynamodb.CreateTableInput{TableName: aws.String("tab1"), KeySchema: []types.KeySchemaElement{hash}, AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("j"), AttributeType: types.ScalarAttributeTypeS}}, BillingMode: types.BillingModePayPerRequest},
			"not defined in AttributeDefinitions"},
		{"extra definition", dynamodb.CreateTableInput{TableName: aws.String("tab1"), KeySchema: []types.KeySchemaElement{hash}, AttributeDefinitions: []types.AttributeDefinition{def, {AttributeName: aws.String("j"), AttributeType: types.ScalarAttributeTypeN}}, BillingMode: types.BillingModePayPerRequest},
			"does not exactly match"},
		{"bad type", dynamodb.CreateTableInput{TableName: aws.String("tab1"), KeySchema: []types.KeySchemaElement{hash}, AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("k"), AttributeType: "BOOL"}}, BillingMode: types.BillingModePayPerRequest},
			"[B, N, S]"},
		{"provisioned without throughput", dynamodb.CreateTableInput{TableName: aws.String("tab1"), KeySchema: []types.KeySchemaElement{hash}, AttributeDefinitions: []types.AttributeDefinition{def}},
			"must both be specified when BillingMode is PROVISIONED"},
		{"on demand with throughput", dynamodb.CreateTableInput{TableName: aws.String("tab1"), KeySchema: []types.KeySchemaElement{hash}, AttributeDefinitions: []types.AttributeDefinition{def}, BillingMode: types.BillingModePayPerRequest,
			ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)}},
			"when BillingMode is PAY_PER_REQUEST"},
		{"an index", dynamodb.CreateTableInput{TableName: aws.String("tab1"), KeySchema: []types.KeySchemaElement{hash}, AttributeDefinitions: []types.AttributeDefinition{def}, BillingMode: types.BillingModePayPerRequest,
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("i"), KeySchema: []types.KeySchemaElement{hash}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}},
			"CreateTable.GlobalSecondaryIndexes is not supported by this fake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.CreateTable(context.Background(), &tc.in)
			wantCode(t, err, "ValidationException", tc.want)
		})
	}
}

func TestItems(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, dynamo.New())
	createPairs(t, c, "pairs")
	table := aws.String("pairs")
	every := map[string]types.AttributeValue{
		"pk":   s("a"),
		"sk":   n("1.0"),
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1, 255}},
		"t":    &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}},
		"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{s("x"), n("2")}},
		"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"in": s("side")}},
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: every}); err != nil {
		t.Fatal(err)
	}
	// 1 and 1.0 are one number, so one key.
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1")}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Item, every) {
		t.Fatalf("GetItem read back %#v, want %#v", got.Item, every)
	}
	next := map[string]types.AttributeValue{"pk": s("a"), "sk": n("1"), "v": s("two")}
	put, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: next, ReturnValues: types.ReturnValueAllOld})
	if err != nil || !reflect.DeepEqual(put.Attributes, every) {
		t.Fatalf("PutItem ALL_OLD: %v, %#v", err, put)
	}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: next, ReturnValues: types.ReturnValueAllNew}); err == nil {
		t.Fatal("PutItem took ReturnValues ALL_NEW")
	}
	del, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1")}, ReturnValues: types.ReturnValueAllOld})
	if err != nil || !reflect.DeepEqual(del.Attributes, next) {
		t.Fatalf("DeleteItem ALL_OLD: %v, %#v", err, del)
	}
	got, err = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1")}})
	if err != nil || got.Item != nil {
		t.Fatalf("GetItem after DeleteItem: %v, %v", err, got.Item)
	}
	// Deleting what is not there is no error, unless a condition says so.
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1")}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1")},
		ConditionExpression: aws.String("attribute_exists(pk)")})
	var failed *types.ConditionalCheckFailedException
	if !errors.As(err, &failed) {
		t.Fatalf("DeleteItem on a condition that fails: %v", err)
	}

	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"item without its range key", func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": s("a")}})
			return err
		}, "Missing the key sk in the item"},
		{"key of the wrong type", func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": s("a"), "sk": s("1")}})
			return err
		}, "Type mismatch for key sk expected: N actual: S"},
		{"empty string key", func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": s(""), "sk": n("1")}})
			return err
		}, "cannot contain an empty string value"},
		{"key with another attribute", func() error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1"), "x": s("y")}})
			return err
		}, "The provided key element does not match the schema"},
		{"not a number", func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1"), "x": n("0x10")}})
			return err
		}, "cannot be converted to a numeric value: 0x10"},
		{"empty set", func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1"), "x": &types.AttributeValueMemberSS{}}})
			return err
		}, "may not be empty"},
		{"set with duplicates", func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1"), "x": &types.AttributeValueMemberNS{Value: []string{"1", "1.0"}}}})
			return err
		}, "contains duplicates"},
		{"a projection", func() error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, Key: map[string]types.AttributeValue{"pk": s("a"), "sk": n("1")}, ProjectionExpression: aws.String("pk")})
			return err
		}, "GetItem.ProjectionExpression is not supported by this fake"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.call(), "ValidationException", tc.want) })
	}
}

// lease is the row the condition and update tests start from.
func lease() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"leaseKey":        s("shardId-0"),
		"leaseOwner":      s("w1"),
		"checkpointOwner": s("w2"),
		"leaseCounter":    n("3"),
		"checkpoint":      s("TRIM_HORIZON"),
		"parentShardId":   &types.AttributeValueMemberSS{Value: []string{"p1", "p2"}},
	}
}

func TestConditions(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, dynamo.New())
	createLeases(t, c, "leases")
	vals := map[string]types.AttributeValue{
		":w1": s("w1"), ":w2": s("w2"), ":three": n("3.0"), ":four": n("4"),
		":parents": &types.AttributeValueMemberSS{Value: []string{"p2", "p1"}},
	}
	for _, tc := range []struct {
		cond  string
		names map[string]string
		pass  bool
	}{
		{"attribute_exists(leaseOwner)", nil, true},
		{"attribute_not_exists(leaseOwner)", nil, false},
		{"attribute_not_exists(nothing)", nil, true},
		{"attribute_not_exists(#k)", map[string]string{"#k": "leaseKey"}, false},
		{"leaseOwner = :w1", nil, true},
		{"leaseOwner = :w2", nil, false},
		{"leaseOwner <> :w2", nil, true},
		{"nothing <> :w2", nil, true},
		{"nothing = :w1", nil, false},
		{"leaseCounter = :three", nil, true},
		{"leaseCounter < :four", nil, true},
		{"leaseCounter <= :three", nil, true},
		{"leaseCounter > :three", nil, false},
		{"leaseCounter >= :four", nil, false},
		{"leaseOwner < :four", nil, false}, // a string and a number have no order
		{"parentShardId = :parents", nil, true},
		{"(leaseOwner = :w2 OR checkpointOwner = :w2) AND leaseCounter = :three", nil, true},
		{"(leaseOwner = :w2 OR checkpointOwner = :w1) AND leaseCounter = :three", nil, false},
		{"leaseOwner = :w2 OR checkpointOwner = :w2 AND leaseCounter = :four", nil, false}, // AND binds tighter
		{"leaseOwner = :w1 or checkpointOwner = :w2 and leaseCounter = :four", nil, true},
		{"NOT attribute_exists(leaseOwner)", nil, false},
		{"NOT (leaseOwner = :w2)", nil, true},
		{"#o = :w1 AND #c = :three", map[string]string{"#o": "leaseOwner", "#c": "leaseCounter"}, true},
	} {
		t.Run(tc.cond, func(t *testing.T) {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("leases"), Item: lease()}); err != nil {
				t.Fatal(err)
			}
			used := map[string]types.AttributeValue{}
			for k, v := range vals {
				if strings.Contains(tc.cond, k) {
					used[k] = v
				}
			}
			if len(used) == 0 {
				used = nil
			}
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("leases"), Item: lease(),
				ConditionExpression: aws.String(tc.cond), ExpressionAttributeNames: tc.names, ExpressionAttributeValues: used})
			var failed *types.ConditionalCheckFailedException
			switch {
			case tc.pass && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.pass && !errors.As(err, &failed):
				t.Fatalf("%v, want ConditionalCheckFailedException", err)
			case !tc.pass && failed.ErrorMessage() != "The conditional request failed":
				t.Fatalf("message %q", failed.ErrorMessage())
			}
		})
	}
	// On an item that does not exist, every attribute is missing.
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("leases"), Item: map[string]types.AttributeValue{"leaseKey": s("new")},
		ConditionExpression: aws.String("attribute_not_exists(leaseKey)")})
	if err != nil {
		t.Fatal(err)
	}
}

func TestUpdates(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, dynamo.New())
	createLeases(t, c, "leases")
	one, zero := n("1"), n("0")
	for _, tc := range []struct {
		name    string
		key     string // default: the lease's
		update  string
		vals    map[string]types.AttributeValue
		rv      types.ReturnValue
		want    map[string]types.AttributeValue // changes to the lease (nil value: removed)
		returns map[string]types.AttributeValue
	}{
		{"renew", "", "SET leaseCounter = leaseCounter + :one", map[string]types.AttributeValue{":one": one}, types.ReturnValueUpdatedNew,
			map[string]types.AttributeValue{"leaseCounter": n("4")}, map[string]types.AttributeValue{"leaseCounter": n("4")}},
		{"take", "", "SET leaseOwner = :me, leaseCounter = leaseCounter + :one, ownerSwitchesSinceCheckpoint = if_not_exists(ownerSwitchesSinceCheckpoint, :zero) + :one REMOVE checkpointOwner, handOffBy",
			map[string]types.AttributeValue{":one": one, ":zero": zero, ":me": s("w3")}, types.ReturnValueAllNew,
			map[string]types.AttributeValue{"leaseOwner": s("w3"), "leaseCounter": n("4"), "ownerSwitchesSinceCheckpoint": n("1"), "checkpointOwner": nil}, nil},
		{"remove first", "", "REMOVE leaseOwner SET leaseCounter = leaseCounter - :one", map[string]types.AttributeValue{":one": one}, types.ReturnValueUpdatedOld,
			map[string]types.AttributeValue{"leaseOwner": nil, "leaseCounter": n("2")}, map[string]types.AttributeValue{"leaseOwner": s("w1"), "leaseCounter": n("3")}},
		{"values from before the update", "", "SET leaseCounter = :one, previous = leaseCounter", map[string]types.AttributeValue{":one": one}, types.ReturnValueNone,
			map[string]types.AttributeValue{"leaseCounter": one, "previous": n("3")}, nil},
		{"if_not_exists of an attribute that exists", "", "SET checkpoint = if_not_exists(checkpoint, :cp)", map[string]types.AttributeValue{":cp": s("LATEST")}, types.ReturnValueAllOld,
			nil, lease()},
		{"decimals", "", "SET leaseCounter = leaseCounter + :half", map[string]types.AttributeValue{":half": n("0.5")}, types.ReturnValueUpdatedNew,
			map[string]types.AttributeValue{"leaseCounter": n("3.5")}, map[string]types.AttributeValue{"leaseCounter": n("3.5")}},
		{"upsert", "shardId-9", "SET checkpoint = :cp", map[string]types.AttributeValue{":cp": s("LATEST")}, types.ReturnValueAllOld,
			nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("leases"), Item: lease()}); err != nil {
				t.Fatal(err)
			}
			want := lease()
			key := "shardId-0"
			if tc.key != "" {
				key = tc.key
				want = map[string]types.AttributeValue{"leaseKey": s(key), "checkpoint": s("LATEST")}
			}
			for k, v := range tc.want {
				if v == nil {
					delete(want, k)
				} else {
					want[k] = v
				}
			}
			returns := tc.returns
			if tc.rv == types.ReturnValueAllNew {
				returns = want
			}
			out, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("leases"), Key: map[string]types.AttributeValue{"leaseKey": s(key)},
				UpdateExpression: aws.String(tc.update), ExpressionAttributeValues: tc.vals, ReturnValues: tc.rv})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Attributes, returns) {
				t.Errorf("returned %#v, want %#v", out.Attributes, returns)
			}
			got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("leases"), Key: map[string]types.AttributeValue{"leaseKey": s(key)}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Item, want) {
				t.Errorf("item %#v, want %#v", got.Item, want)
			}
		})
	}
}

func TestExpressionErrors(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, dynamo.New())
	createLeases(t, c, "leases")
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("leases"), Item: lease()}); err != nil {
		t.Fatal(err)
	}
	one := map[string]types.AttributeValue{":one": n("1")}
	for _, tc := range []struct {
		name   string
		update string
		cond   string
		names  map[string]string
		vals   map[string]types.AttributeValue
		want   string
	}{
		{"update ends early", "SET leaseCounter = ", "", nil, one, `Invalid UpdateExpression: Syntax error; token: "<EOF>", near: "="`},
		{"two equals", "SET leaseCounter == :one", "", nil, one, `Syntax error; token: "=", near: "== :one"`},
		{"no clause", "leaseCounter = :one", "", nil, one, `Syntax error; token: "leaseCounter"`},
		{"condition ends early", "SET a = :one", "leaseOwner = :one AND", nil, one, `Invalid ConditionExpression: Syntax error; token: "<EOF>"`},
		{"no comparator", "SET a = :one", "leaseOwner :one", nil, one, `Invalid ConditionExpression: Syntax error; token: ":one"`},
		{"unclosed parenthesis", "SET a = :one", "(leaseOwner = :one", nil, one, `Syntax error; token: "<EOF>"`},
		{"bad character", "SET a = :one $", "", nil, one, `Invalid character encountered; character: "$"`},
		{"undefined value", "SET a = :two", "", nil, nil, "An expression attribute value used in expression is not defined; attribute value: :two"},
		{"undefined name", "SET #a = :one", "", nil, one, "An expression attribute name used in the document path is not defined; attribute name: #a"},
		{"unused value", "SET a = :one", "", nil, map[string]types.AttributeValue{":one": n("1"), ":two": n("2")}, "Value provided in ExpressionAttributeValues unused in expressions: keys: {:two}"},
		{"unused name", "SET a = :one", "", map[string]string{"#a": "a"}, one, "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a}"},
		{"reserved word", "SET owner = :one", "", nil, one, "Attribute name is a reserved keyword; reserved keyword: owner"},
		{"unsupported function", "SET a = :one", "begins_with(leaseOwner, :one)", nil, one, "the function begins_with is not supported by this fake"},
		{"unknown function", "SET a = :one", "frobnicate(leaseOwner)", nil, one, "Invalid function name; function: frobnicate"},
		{"size", "SET a = :one", "size(leaseOwner) = :one", nil, one, "the function size is not supported by this fake"},
		{"list_append", "SET a = list_append(a, :one)", "", nil, one, "the function list_append is not supported by this fake"},
		{"nested path", "SET a.b = :one", "", nil, one, "nested attribute paths (a....) are not supported by this fake"},
		{"BETWEEN", "SET a = :one", "leaseCounter BETWEEN :one AND :one", nil, one, "the BETWEEN operator is not supported by this fake"},
		{"ADD", "ADD leaseCounter :one", "", nil, one, "the ADD clause is not supported by this fake"},
		{"SET twice", "SET a = :one SET b = :one", "", nil, one, `The "SET" section can only be used once in an update expression;`},
		{"overlapping paths", "SET a = :one REMOVE a", "", nil, one, "Two document paths overlap with each other"},
		{"key attribute", "SET leaseKey = :one", "", nil, one, "Cannot update attribute leaseKey. This attribute is part of the key"},
		{"adding a string", "SET leaseOwner = leaseOwner + :one", "", nil, one, "An operand in the update expression has an incorrect data type"},
		{"adding a missing attribute", "SET a = nothing + :one", "", nil, one, "The provided expression refers to an attribute that does not exist in the item"},
		{"copying a missing attribute", "SET a = nothing", "", nil, nil, "The provided expression refers to an attribute that does not exist in the item"},
		{"empty update", " ", "", nil, nil, "Invalid UpdateExpression: The expression can not be empty;"},
		{"value not a number", "SET a = :one", "", nil, map[string]types.AttributeValue{":one": n("one")}, "cannot be converted to a numeric value: one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &dynamodb.UpdateItemInput{TableName: aws.String("leases"), Key: map[string]types.AttributeValue{"leaseKey": s("shardId-0")},
				UpdateExpression: aws.String(tc.update), ExpressionAttributeNames: tc.names, ExpressionAttributeValues: tc.vals}
			if tc.cond != "" {
				in.ConditionExpression = aws.String(tc.cond)
			}
			_, err := c.UpdateItem(ctx, in)
			wantCode(t, err, "ValidationException", tc.want)
		})
	}
	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("leases"), Key: map[string]types.AttributeValue{"leaseKey": s("shardId-0")}})
	if err != nil || !reflect.DeepEqual(got.Item, lease()) {
		t.Fatalf("a refused update changed the item: %v, %#v", err, got.Item)
	}
}

func TestScanPages(t *testing.T) {
	ctx := context.Background()
	c, _ := serve(t, dynamo.New())
	createPairs(t, c, "pairs")
	for i := range 25 {
		item := map[string]types.AttributeValue{"pk": s(string(rune('a' + i%5))), "sk": n(string(rune('0' + i/5)))}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("pairs"), Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		limit int32
		pages []int
	}{
		{0, []int{25}},
		{10, []int{10, 10, 5}},
		{5, []int{5, 5, 5, 5, 5, 0}}, // a page that stops at Limit has a LastEvaluatedKey
		{100, []int{25}},
	} {
		in := &dynamodb.ScanInput{TableName: aws.String("pairs"), ConsistentRead: aws.Bool(true)}
		if tc.limit > 0 {
			in.Limit = aws.Int32(tc.limit)
		}
		var sizes []int
		seen := map[string]bool{}
		for p := dynamodb.NewScanPaginator(c, in); p.HasMorePages(); {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(page.Items))
			if int(page.Count) != len(page.Items) || page.ScannedCount != page.Count {
				t.Fatalf("Count %d, ScannedCount %d for %d items", page.Count, page.ScannedCount, len(page.Items))
			}
			for _, it := range page.Items {
				k := it["pk"].(*types.AttributeValueMemberS).Value + it["sk"].(*types.AttributeValueMemberN).Value
				if seen[k] {
					t.Fatalf("limit %d: %s read twice", tc.limit, k)
				}
				seen[k] = true
			}
		}
		if !slices.Equal(sizes, tc.pages) || len(seen) != 25 {
			t.Errorf("limit %d: pages of %v (%d items), want %v", tc.limit, sizes, len(seen), tc.pages)
		}
	}
	_, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("pairs"), ExclusiveStartKey: map[string]types.AttributeValue{"pk": s("a")}})
	wantCode(t, err, "ValidationException", "The provided starting key is invalid")
	_, err = c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("pairs"), Limit: aws.Int32(0)})
	wantCode(t, err, "ValidationException", "greater than or equal to 1")
	_, err = c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("pairs"), FilterExpression: aws.String("pk = :a"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":a": s("a")}})
	wantCode(t, err, "ValidationException", "Scan.ExpressionAttributeValues is not supported by this fake")
}

// The wire itself: requests no SDK would send.
func TestWire(t *testing.T) {
	_, url := serve(t, dynamo.New())
	big := `{"TableName":"` + strings.Repeat("x", 16<<20) + `"}`
	for _, tc := range []struct {
		name, method, target, body string
		status                     int
		code                       string
	}{
		{"not JSON", "POST", "DynamoDB_20120810.ListTables", "{", 400, "SerializationException"},
		{"not an object", "POST", "DynamoDB_20120810.ListTables", "[]", 400, "SerializationException"},
		{"member of the wrong type", "POST", "DynamoDB_20120810.DescribeTable", `{"TableName": 5}`, 400, "SerializationException"},
		{"no such value type", "POST", "DynamoDB_20120810.PutItem", `{"TableName":"t12","Item":{"k":{"X":"1"}}}`, 400, "SerializationException"},
		{"value of the wrong type", "POST", "DynamoDB_20120810.PutItem", `{"TableName":"t12","Item":{"k":{"S":1}}}`, 400, "SerializationException"},
		{"value not an object", "POST", "DynamoDB_20120810.PutItem", `{"TableName":"t12","Item":{"k":"a"}}`, 400, "SerializationException"},
		{"two value types", "POST", "DynamoDB_20120810.PutItem", `{"TableName":"t12","Item":{"k":{"S":"a","N":"1"}}}`, 400, "ValidationException"},
		{"NULL false", "POST", "DynamoDB_20120810.PutItem", `{"TableName":"t12","Item":{"k":{"NULL":false}}}`, 400, "ValidationException"},
		{"legacy parameter", "POST", "DynamoDB_20120810.PutItem", `{"TableName":"t12","Item":{"k":{"S":"a"}},"Expected":{"k":{"Exists":false}}}`, 400, "ValidationException"},
		{"no table", "POST", "DynamoDB_20120810.DescribeTable", `{"TableName":"nope"}`, 400, "ResourceNotFoundException"},
		{"no table name", "POST", "DynamoDB_20120810.DescribeTable", `{}`, 400, "ValidationException"},
		{"unknown operation", "POST", "DynamoDB_20120810.Query", `{}`, 400, "UnknownOperationException"},
		{"no target", "POST", "", `{}`, 400, "UnknownOperationException"},
		{"another service", "POST", "Kinesis_20131202.ListStreams", `{}`, 400, "UnknownOperationException"},
		{"GET", "GET", "DynamoDB_20120810.ListTables", "", 400, "UnknownOperationException"},
		{"too large", "POST", "DynamoDB_20120810.DescribeTable", big, 413, "SerializationException"},
		{"empty body", "POST", "DynamoDB_20120810.ListTables", "", 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url, strings.NewReader(tc.body))
			req.Header.Set("X-Amz-Target", tc.target)
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
			code, status, msg := rawCall(t, req)
			if status != tc.status || code != tc.code {
				t.Fatalf("%d %s (%s), want %d %s", status, code, msg, tc.status, tc.code)
			}
		})
	}
}

// rawCall sends a request and reads the answer's error code (without the
// service's namespace, which it checks), status and message.
func rawCall(t *testing.T, req *http.Request) (code string, status int, msg string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Type") != "application/x-amz-json-1.0" {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	if body.Type != "" {
		var ok bool
		if code, ok = strings.CutPrefix(body.Type, "com.amazonaws.dynamodb.v20120810#"); !ok {
			t.Errorf("__type %q lacks the service's namespace", body.Type)
		}
	}
	return code, resp.StatusCode, body.Message
}

// A failure of the fake is a 500 for that request only: the lock is not
// left held, and the next request is served.
func TestPanicIs500(t *testing.T) {
	svc := dynamo.New()
	c, url := serve(t, svc)
	createLeases(t, c, "leases")
	svc.Hook = func(_ context.Context, op string) error {
		if op == "Scan" {
			panic("the scan broke")
		}
		return nil
	}
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"TableName":"leases"}`))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.Scan")
	code, status, msg := rawCall(t, req)
	if status != 500 || code != "InternalServerError" || !strings.Contains(msg, "the scan broke") {
		t.Fatalf("a panic answered %d %s %q, want 500 InternalServerError", status, code, msg)
	}
	_, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("leases")})
	wantCode(t, err, "InternalServerError", "the scan broke")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("leases"), Item: lease()}); err != nil {
		t.Fatalf("after a panic: %v", err)
	}
	if svc.MaxInFlight() != 1 {
		t.Fatalf("MaxInFlight %d after calls one at a time", svc.MaxInFlight())
	}
}

// Transport serves a client in process; Hook and Latency apply to the
// wire as they do in process.
func TestTransport(t *testing.T) {
	svc := dynamo.New()
	opts := options("http://dynamodb.invalid")
	opts.HTTPClient = &http.Client{Transport: svc.Transport()}
	c := dynamodb.New(opts)
	ctx := context.Background()
	createLeases(t, c, "leases")
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("leases"), Item: lease()}); err != nil {
		t.Fatal(err)
	}
	if it := svc.Item("leases", "shardId-0"); !reflect.DeepEqual(it, lease()) {
		t.Fatalf("Item %#v", it)
	}
	svc.Put("leases", map[string]types.AttributeValue{"leaseKey": s("shardId-1")})
	out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("leases")})
	if err != nil || len(out.Items) != 2 {
		t.Fatalf("Scan: %v, %d items", err, len(out.Items))
	}
	if svc.Calls("PutItem") != 1 || svc.Calls("Scan") != 1 || svc.Calls("CreateTable") != 1 {
		t.Fatalf("calls: PutItem %d, Scan %d, CreateTable %d", svc.Calls("PutItem"), svc.Calls("Scan"), svc.Calls("CreateTable"))
	}

	svc.Hook = func(_ context.Context, op string) error {
		return &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
	}
	_, err = c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("leases")})
	var throttled *types.ProvisionedThroughputExceededException
	if !errors.As(err, &throttled) {
		t.Fatalf("a hook's throttle came back as %v", err)
	}
	svc.Hook = func(ctx context.Context, op string) error { // a hung table
		<-ctx.Done()
		return ctx.Err()
	}
	hung, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Scan(hung, &dynamodb.ScanInput{TableName: aws.String("leases")}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a hung call ended with %v", err)
	}
	svc.Hook = nil
	svc.Latency = 30 * time.Millisecond
	start := time.Now()
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("leases")}); err != nil || time.Since(start) < svc.Latency {
		t.Fatalf("DescribeTable with latency: %v after %v", err, time.Since(start))
	}
	svc.ResetMaxInFlight()
	if svc.MaxInFlight() != 0 {
		t.Fatalf("MaxInFlight %d with no call in flight", svc.MaxInFlight())
	}
}
