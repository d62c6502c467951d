package dynamo

import (
	"bytes"
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// item is one row: attribute name to value.
type item = map[string]types.AttributeValue

// numberRE is the syntax of a DynamoDB number: decimal digits with an
// optional point and exponent (no hex, no Inf, no NaN, which Go's parsers
// would take).
var numberRE = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// number reads an N value exactly: numbers are compared and added as
// decimals, as the service does, not as floats.
func number(s string) (*big.Rat, bool) {
	if !numberRE.MatchString(s) {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// formatNumber writes a sum back as the service does: an integer without a
// point, a fraction with the digits it needs.
func formatNumber(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	return strings.TrimRight(r.FloatString(40), "0")
}

// checkValue refuses what the service refuses in any attribute value: a
// number that is not one, an empty set, a set with a value twice.
func checkValue(v types.AttributeValue) error {
	switch v := v.(type) {
	case *types.AttributeValueMemberN:
		if _, ok := number(v.Value); !ok {
			return validation("The parameter cannot be converted to a numeric value: %s", v.Value)
		}
	case *types.AttributeValueMemberSS:
		return checkSet("string", v.Value, func(s string) string { return s })
	case *types.AttributeValueMemberNS:
		for _, n := range v.Value {
			if _, ok := number(n); !ok {
				return validation("The parameter cannot be converted to a numeric value: %s", n)
			}
		}
		return checkSet("number", v.Value, canonicalNumber)
	case *types.AttributeValueMemberBS:
		return checkSet("binary", v.Value, func(b []byte) string { return string(b) })
	case *types.AttributeValueMemberL:
		for _, e := range v.Value {
			if err := checkValue(e); err != nil {
				return err
			}
		}
	case *types.AttributeValueMemberM:
		return checkItem(v.Value)
	case nil:
		return validation("Supplied AttributeValue is empty, must contain exactly one of the supported datatypes")
	}
	return nil
}

func checkSet[T any](kind string, vals []T, key func(T) string) error {
	if len(vals) == 0 {
		return validation("One or more parameter values were invalid: An %s set  may not be empty", kind)
	}
	seen := map[string]bool{}
	for _, v := range vals {
		k := key(v)
		if seen[k] {
			return validation("One or more parameter values were invalid: Input collection contains duplicates")
		}
		seen[k] = true
	}
	return nil
}

// checkItem checks every value of a map of attributes.
func checkItem(m item) error {
	for _, v := range m {
		if err := checkValue(v); err != nil {
			return err
		}
	}
	return nil
}

// canonicalNumber is a number's text with its value's identity: "1",
// "1.0" and "10e-1" are one number to the service.
func canonicalNumber(s string) string {
	r, _ := number(s)
	return r.RatString()
}

// equal is the = of expressions: same type and same value, sets equal as
// sets, numbers equal as numbers.
func equal(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && canonicalNumber(a.Value) == canonicalNumber(b.Value)
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberSS:
		b, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(a.Value, b.Value, func(s string) string { return s })
	case *types.AttributeValueMemberNS:
		b, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(a.Value, b.Value, canonicalNumber)
	case *types.AttributeValueMemberBS:
		b, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameSet(a.Value, b.Value, func(b []byte) string { return string(b) })
	case *types.AttributeValueMemberL:
		b, ok := b.(*types.AttributeValueMemberL)
		if !ok || len(a.Value) != len(b.Value) {
			return false
		}
		for i := range a.Value {
			if !equal(a.Value[i], b.Value[i]) {
				return false
			}
		}
		return true
	case *types.AttributeValueMemberM:
		b, ok := b.(*types.AttributeValueMemberM)
		return ok && maps.EqualFunc(a.Value, b.Value, equal)
	}
	return false
}

func sameSet[T any](a, b []T, key func(T) string) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[string]bool{}
	for _, v := range a {
		in[key(v)] = true
	}
	for _, v := range b {
		if !in[key(v)] {
			return false
		}
	}
	return true
}

// order compares two values for <, <=, > and >=: numbers by value,
// strings and binaries byte by byte. ok is false when the two cannot be
// ordered (other types, or two types), and such a comparison is false.
func order(a, b types.AttributeValue) (c int, ok bool) {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		if b, ok := b.(*types.AttributeValueMemberS); ok {
			return strings.Compare(a.Value, b.Value), true
		}
	case *types.AttributeValueMemberN:
		if b, ok := b.(*types.AttributeValueMemberN); ok {
			x, _ := number(a.Value)
			y, _ := number(b.Value)
			return x.Cmp(y), true
		}
	case *types.AttributeValueMemberB:
		if b, ok := b.(*types.AttributeValueMemberB); ok {
			return bytes.Compare(a.Value, b.Value), true
		}
	}
	return 0, false
}

// typeName is the service's name of a value's type, for messages.
func typeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberM:
		return "M"
	}
	return fmt.Sprintf("%T", v)
}
