package emulator

import (
	"context"
	"testing"

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
	out, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String("leases")})
	if err != nil || out.Table.TableStatus != types.TableStatusActive {
		t.Fatalf("table %v, %v", out, err)
	}
	d.Stop()
	assertGone(t, d.PID)
}
