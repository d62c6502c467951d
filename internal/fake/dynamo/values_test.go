package dynamo

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The value semantics of expressions, type by type; the wire tests go
// through them with the types a lease row holds.
func TestEqualAndOrder(t *testing.T) {
	str := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	num := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	bin := func(v ...byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }
	list := func(v ...types.AttributeValue) types.AttributeValue { return &types.AttributeValueMemberL{Value: v} }
	for _, tc := range []struct {
		a, b  types.AttributeValue
		equal bool
		order int // -1, 0, 1; 2: no order
	}{
		{str("a"), str("a"), true, 0},
		{str("a"), str("b"), false, -1},
		{num("1"), num("1.00"), true, 0},
		{num("10"), num("9.5"), false, 1},
		{num("1e2"), num("100"), true, 0},
		{num("1"), str("1"), false, 2},
		{bin(1, 2), bin(1, 2), true, 0},
		{bin(1), bin(2), false, -1},
		{&types.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberBOOL{Value: true}, true, 2},
		{&types.AttributeValueMemberBOOL{Value: true}, &types.AttributeValueMemberBOOL{Value: false}, false, 2},
		{&types.AttributeValueMemberNULL{Value: true}, &types.AttributeValueMemberNULL{Value: true}, true, 2},
		{&types.AttributeValueMemberSS{Value: []string{"a", "b"}}, &types.AttributeValueMemberSS{Value: []string{"b", "a"}}, true, 2},
		{&types.AttributeValueMemberSS{Value: []string{"a", "b"}}, &types.AttributeValueMemberSS{Value: []string{"a", "c"}}, false, 2},
		{&types.AttributeValueMemberSS{Value: []string{"a"}}, &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, false, 2},
		{&types.AttributeValueMemberNS{Value: []string{"1", "2"}}, &types.AttributeValueMemberNS{Value: []string{"2.0", "1"}}, true, 2},
		{&types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}}, &types.AttributeValueMemberBS{Value: [][]byte{{2}, {1}}}, true, 2},
		{list(str("a"), num("1")), list(str("a"), num("1.0")), true, 2},
		{list(str("a"), num("1")), list(num("1"), str("a")), false, 2},
		{list(str("a")), list(str("a"), str("a")), false, 2},
		{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": str("a")}}, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": str("a")}}, true, 2},
		{&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"x": str("a")}}, &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"y": str("a")}}, false, 2},
		{str("a"), nil, false, 2},
	} {
		if got := equal(tc.a, tc.b); got != tc.equal {
			t.Errorf("%s %v = %s %v: %v, want %v", typeName(tc.a), tc.a, typeName(tc.b), tc.b, got, tc.equal)
		}
		c, ok := order(tc.a, tc.b)
		if want := tc.order; ok != (want != 2) || ok && c != want {
			t.Errorf("order of %s %v and %s %v: %d, %v; want %d", typeName(tc.a), tc.a, typeName(tc.b), tc.b, c, ok, want)
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, tc := range []struct {
		in, out string // out "": not a number
	}{
		{"1", "1"}, {"-1.50", "-1.5"}, {"1e3", "1000"}, {"+.5", "0.5"}, {"2.", "2"},
		{"0x10", ""}, {"Inf", ""}, {"NaN", ""}, {"1/2", ""}, {"", ""}, {"1e", ""},
	} {
		r, ok := number(tc.in)
		if ok != (tc.out != "") || ok && formatNumber(r) != tc.out {
			t.Errorf("number(%q) = %v, %v; want %q", tc.in, r, ok, tc.out)
		}
	}
}
