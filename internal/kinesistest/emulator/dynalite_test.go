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
	if err := Available(Kinesalite); err != nil {
		if InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	d, err := StartDynalite(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	c := d.Client(t)
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
	assertGone(t, d.PID)
}
