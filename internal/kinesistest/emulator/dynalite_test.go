package emulator

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestDynalite(t *testing.T) {
	for _, mode := range []string{"", "dynalite"} {
		t.Run("KINESIS_SHARDS_TEST_DYNAMO="+mode, func(t *testing.T) {
			if mode == "dynalite" {
				if err := Available(Kinesalite); err != nil {
					if InCI() {
						t.Fatal(err)
					}
					t.Skip(err)
				}
			}
			t.Setenv(dynamoEnv, mode)
			d, err := StartDynalite(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(d.Stop)
			if (mode == "") != (d.PID == 0) {
				t.Fatalf("PID %d with %s=%q", d.PID, dynamoEnv, mode)
			}
			c := d.Client(t, func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
			_, err = c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
				TableName:            aws.String("leases"),
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("leaseKey"), AttributeType: types.ScalarAttributeTypeS}},
				KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("leaseKey"), KeyType: types.KeyTypeHash}},
				BillingMode:          types.BillingModePayPerRequest,
			})
			if err != nil {
				t.Fatal(err)
			}
			w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
				o.MinDelay, o.MaxDelay = 50*time.Millisecond, 200*time.Millisecond
			})
			if err := w.Wait(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("leases")}, 10*time.Second); err != nil {
				t.Fatalf("table not ACTIVE: %v", err)
			}
			d.Stop()
			if d.PID != 0 {
				assertGone(t, d.PID)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err == nil {
				t.Fatal("answered after Stop")
			}
		})
	}
	t.Setenv(dynamoEnv, "dynamodb-local")
	if _, err := StartDynalite(context.Background()); err == nil {
		t.Fatalf("%s=dynamodb-local started something", dynamoEnv)
	}
}
