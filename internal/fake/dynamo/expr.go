package dynamo

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Expressions. The fake parses condition and update expressions as the
// service does, with its error messages, for the part of the language the
// tool and its tests write:
//
//	condition: a OR b, a AND b, NOT a, (a); x = y, x <> y, x < y, x <= y,
//	           x > y, x >= y; attribute_exists(p), attribute_not_exists(p)
//	update:    SET p = v, p = v + w, p = v - w, p = if_not_exists(q, v);
//	           REMOVE p, q
//
// where an operand is a top-level attribute (a name, or an #name
// placeholder) or a :value placeholder. The rest of the language (nested
// paths, BETWEEN, IN, the other functions, ADD and DELETE) is refused with
// a ValidationException that says so, never silently misread.

// exprs holds one request's placeholders and which of them its
// expressions used: the service refuses a request with a placeholder that
// no expression uses.
type exprs struct {
	names  map[string]string
	values map[string]types.AttributeValue
	used   map[string]bool
}

func newExprs(names map[string]string, values map[string]types.AttributeValue) (*exprs, error) {
	for _, v := range values {
		if err := checkValue(v); err != nil {
			return nil, err
		}
	}
	return &exprs{names: names, values: values, used: map[string]bool{}}, nil
}

// unused refuses placeholders no expression used.
func (x *exprs) unused() error {
	var names, values []string
	for k := range x.names {
		if !x.used[k] {
			names = append(names, k)
		}
	}
	for k := range x.values {
		if !x.used[k] {
			values = append(values, k)
		}
	}
	sort.Strings(names)
	sort.Strings(values)
	switch {
	case len(names) > 0:
		return validation("Value provided in ExpressionAttributeNames unused in expressions: keys: {%s}", strings.Join(names, ", "))
	case len(values) > 0:
		return validation("Value provided in ExpressionAttributeValues unused in expressions: keys: {%s}", strings.Join(values, ", "))
	}
	return nil
}

// condFn is a parsed condition: does the item (nil: none) pass?
type condFn func(item) bool

// valueFn is a parsed operand or update value, evaluated on the item
// before the update. An operand that names a missing attribute is nil.
type valueFn func(item) (types.AttributeValue, error)

// condition parses a condition expression; nil passes every item.
func (x *exprs) condition(expr *string) (condFn, error) {
	if expr == nil {
		return func(item) bool { return true }, nil
	}
	p, err := x.parser("ConditionExpression", *expr)
	if err != nil {
		return nil, err
	}
	c, err := p.or()
	if err == nil && !p.at(tEOF) {
		err = p.syntax()
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// updateExpr is a parsed update expression.
type updateExpr struct {
	sets    []setAction
	removes []string
	paths   []string // every attribute it writes, in order
}

type setAction struct {
	path  string
	value valueFn
}

// update parses an update expression.
func (x *exprs) update(expr string) (*updateExpr, error) {
	p, err := x.parser("UpdateExpression", expr)
	if err != nil {
		return nil, err
	}
	u := &updateExpr{}
	seen := map[string]bool{}
	for !p.at(tEOF) {
		t := p.next()
		clause := strings.ToUpper(t.text)
		if t.kind != tIdent {
			return nil, p.syntaxAt(t)
		}
		switch clause {
		case "SET", "REMOVE":
		case "ADD", "DELETE":
			return nil, p.fail("the %s clause is not supported by this fake", clause)
		default:
			return nil, p.syntaxAt(t)
		}
		if seen[clause] {
			return nil, p.fail("The %q section can only be used once in an update expression;", clause)
		}
		seen[clause] = true
		for {
			path, err := p.path()
			if err != nil {
				return nil, err
			}
			for _, q := range u.paths {
				if q == path {
					return nil, p.fail("Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [%s], path two: [%s]", q, path)
				}
			}
			u.paths = append(u.paths, path)
			if clause == "REMOVE" {
				u.removes = append(u.removes, path)
			} else {
				if !p.punct("=") {
					return nil, p.syntax()
				}
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				u.sets = append(u.sets, setAction{path, v})
			}
			if !p.punct(",") {
				break
			}
		}
	}
	if len(u.paths) == 0 {
		return nil, p.syntax()
	}
	return u, nil
}

// apply writes the update into next; every value is computed from old,
// the item as it was before the call, as the service does.
func (u *updateExpr) apply(old, next item) error {
	for _, s := range u.sets {
		v, err := s.value(old)
		if err != nil {
			return err
		}
		if v == nil {
			return validation("The provided expression refers to an attribute that does not exist in the item")
		}
		next[s.path] = v
	}
	for _, p := range u.removes {
		delete(next, p)
	}
	return nil
}

type tokKind int

const (
	tEOF   tokKind = iota
	tIdent         // an attribute or function name, or a keyword
	tName          // #name
	tValue         // :value
	tPunct         // ( ) , = <> < <= > >= + - . [ ]
	tBad           // a character the language has no use for
)

type token struct {
	kind tokKind
	text string
	pos  int
}

// parser reads one expression of a request.
type parser struct {
	x    *exprs
	what string // "ConditionExpression" or "UpdateExpression", for messages
	src  string
	toks []token
	i    int
}

func (x *exprs) parser(what, src string) (*parser, error) {
	p := &parser{x: x, what: what, src: src, toks: lex(src)}
	if strings.TrimSpace(src) == "" {
		return nil, validation("Invalid %s: The expression can not be empty;", what)
	}
	return p, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }

func lex(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isIdentStart(c) || ((c == '#' || c == ':') && i+1 < len(s) && isIdentPart(s[i+1])):
			j := i + 1
			for j < len(s) && isIdentPart(s[j]) {
				j++
			}
			kind := tIdent
			if c == '#' {
				kind = tName
			} else if c == ':' {
				kind = tValue
			}
			out = append(out, token{kind, s[i:j], i})
			i = j
		case strings.HasPrefix(s[i:], "<>") || strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">="):
			out = append(out, token{tPunct, s[i : i+2], i})
			i += 2
		case strings.IndexByte("(),=<>+-.[]", c) >= 0:
			out = append(out, token{tPunct, s[i : i+1], i})
			i++
		default:
			out = append(out, token{tBad, s[i : i+1], i})
			i++
		}
	}
	return append(out, token{tEOF, "<EOF>", len(s)})
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) at(k tokKind) bool { return p.peek().kind == k }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// punct consumes the punctuation s if it comes next.
func (p *parser) punct(s string) bool {
	if t := p.peek(); t.kind == tPunct && t.text == s {
		p.i++
		return true
	}
	return false
}

// keyword consumes the keyword (any case) if it comes next.
func (p *parser) keyword(w string) bool {
	if t := p.peek(); t.kind == tIdent && strings.EqualFold(t.text, w) {
		p.i++
		return true
	}
	return false
}

// call reports whether a function call comes next (a name and "(").
func (p *parser) call() bool {
	return p.at(tIdent) && p.toks[p.i+1].kind == tPunct && p.toks[p.i+1].text == "("
}

func (p *parser) fail(format string, args ...any) error {
	return validation("Invalid %s: %s", p.what, fmt.Sprintf(format, args...))
}

func (p *parser) syntax() error { return p.syntaxAt(p.peek()) }

// syntaxAt is the service's syntax error: the token, and the text from
// the token before it to the one after it.
func (p *parser) syntaxAt(t token) error {
	if t.kind == tBad {
		return p.fail("Invalid character encountered; character: %q, near: %q", t.text, p.near(t))
	}
	return p.fail("Syntax error; token: %q, near: %q", t.text, p.near(t))
}

func (p *parser) near(t token) string {
	k := 0
	for k < len(p.toks)-1 && p.toks[k].pos < t.pos {
		k++
	}
	from := p.toks[max(k-1, 0)].pos
	to := len(p.src)
	if k+2 < len(p.toks) {
		to = p.toks[k+2].pos
	}
	return strings.TrimSpace(p.src[from:to])
}

// or := and {OR and}
func (p *parser) or() (condFn, error) {
	l, err := p.and()
	for err == nil && p.keyword("OR") {
		var r condFn
		if r, err = p.and(); err == nil {
			a := l
			l = func(it item) bool { return a(it) || r(it) }
		}
	}
	return l, err
}

// and := not {AND not}
func (p *parser) and() (condFn, error) {
	l, err := p.not()
	for err == nil && p.keyword("AND") {
		var r condFn
		if r, err = p.not(); err == nil {
			a := l
			l = func(it item) bool { return a(it) && r(it) }
		}
	}
	return l, err
}

// not := NOT not | primary
func (p *parser) not() (condFn, error) {
	if !p.keyword("NOT") {
		return p.primary()
	}
	c, err := p.not()
	if err != nil {
		return nil, err
	}
	return func(it item) bool { return !c(it) }, nil
}

var comparisons = map[string]func(a, b types.AttributeValue) bool{
	"=":  equal,
	"<>": func(a, b types.AttributeValue) bool { return !equal(a, b) },
	"<":  func(a, b types.AttributeValue) bool { c, ok := order(a, b); return ok && c < 0 },
	"<=": func(a, b types.AttributeValue) bool { c, ok := order(a, b); return ok && c <= 0 },
	">":  func(a, b types.AttributeValue) bool { c, ok := order(a, b); return ok && c > 0 },
	">=": func(a, b types.AttributeValue) bool { c, ok := order(a, b); return ok && c >= 0 },
}

// primary := ( or ) | function | operand comparator operand
func (p *parser) primary() (condFn, error) {
	if p.punct("(") {
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.punct(")") {
			return nil, p.syntax()
		}
		return c, nil
	}
	if p.call() {
		return p.function()
	}
	l, err := p.operand()
	if err != nil {
		return nil, err
	}
	t := p.next()
	cmp := comparisons[t.text]
	switch {
	case t.kind == tPunct && cmp != nil:
	case t.kind == tIdent && (strings.EqualFold(t.text, "BETWEEN") || strings.EqualFold(t.text, "IN")):
		return nil, p.fail("the %s operator is not supported by this fake", strings.ToUpper(t.text))
	default:
		return nil, p.syntaxAt(t)
	}
	r, err := p.operand()
	if err != nil {
		return nil, err
	}
	return func(it item) bool {
		a, _ := l(it)
		b, _ := r(it)
		// A missing attribute equals nothing, so only <> holds.
		if a == nil || b == nil {
			return t.text == "<>"
		}
		return cmp(a, b)
	}, nil
}

// function := attribute_exists(path) | attribute_not_exists(path)
func (p *parser) function() (condFn, error) {
	name := p.next().text
	switch name {
	case "attribute_exists", "attribute_not_exists":
	case "attribute_type", "begins_with", "contains", "size":
		return nil, p.fail("the function %s is not supported by this fake", name)
	default:
		return nil, p.fail("Invalid function name; function: %s", name)
	}
	p.punct("(")
	path, err := p.path()
	if err != nil {
		return nil, err
	}
	if !p.punct(")") {
		return nil, p.syntax()
	}
	want := name == "attribute_exists"
	return func(it item) bool {
		_, has := it[path]
		return has == want
	}, nil
}

// operand := path | :value
func (p *parser) operand() (valueFn, error) {
	if p.call() {
		name := p.peek().text
		if name == "size" {
			return nil, p.fail("the function size is not supported by this fake")
		}
		return nil, p.fail("Invalid function name; function: %s", name)
	}
	if p.at(tValue) {
		v, err := p.placeholderValue()
		if err != nil {
			return nil, err
		}
		return func(item) (types.AttributeValue, error) { return v, nil }, nil
	}
	path, err := p.path()
	if err != nil {
		return nil, err
	}
	return func(it item) (types.AttributeValue, error) { return it[path], nil }, nil
}

func (p *parser) placeholderValue() (types.AttributeValue, error) {
	t := p.next()
	v, ok := p.x.values[t.text]
	if !ok {
		return nil, p.fail("An expression attribute value used in expression is not defined; attribute value: %s", t.text)
	}
	p.x.used[t.text] = true
	return v, nil
}

// path := name | #name, a top-level attribute.
func (p *parser) path() (string, error) {
	t := p.next()
	var name string
	switch t.kind {
	case tIdent:
		if reserved[strings.ToUpper(t.text)] {
			return "", p.fail("Attribute name is a reserved keyword; reserved keyword: %s", t.text)
		}
		name = t.text
	case tName:
		n, ok := p.x.names[t.text]
		if !ok {
			return "", p.fail("An expression attribute name used in the document path is not defined; attribute name: %s", t.text)
		}
		p.x.used[t.text] = true
		name = n
	default:
		return "", p.syntaxAt(t)
	}
	if p.peek().text == "." || p.peek().text == "[" {
		return "", p.fail("nested attribute paths (%s%s...) are not supported by this fake", t.text, p.peek().text)
	}
	return name, nil
}

// value := term [(+|-) term]
func (p *parser) value() (valueFn, error) {
	l, err := p.term()
	if err != nil {
		return nil, err
	}
	var sign int64
	switch {
	case p.punct("+"):
		sign = 1
	case p.punct("-"):
		sign = -1
	default:
		return l, nil
	}
	r, err := p.term()
	if err != nil {
		return nil, err
	}
	return func(it item) (types.AttributeValue, error) {
		a, err := l(it)
		if err != nil {
			return nil, err
		}
		b, err := r(it)
		if err != nil {
			return nil, err
		}
		if a == nil || b == nil {
			return nil, validation("The provided expression refers to an attribute that does not exist in the item")
		}
		an, ok1 := a.(*types.AttributeValueMemberN)
		bn, ok2 := b.(*types.AttributeValueMemberN)
		if !ok1 || !ok2 {
			return nil, validation("An operand in the update expression has an incorrect data type")
		}
		x, _ := number(an.Value)
		y, _ := number(bn.Value)
		sum := new(big.Rat).Mul(y, big.NewRat(sign, 1))
		return &types.AttributeValueMemberN{Value: formatNumber(sum.Add(x, sum))}, nil
	}, nil
}

// term := if_not_exists(path, term) | operand
func (p *parser) term() (valueFn, error) {
	if !p.call() {
		return p.operand()
	}
	switch name := p.next().text; name {
	case "if_not_exists":
	case "list_append":
		return nil, p.fail("the function list_append is not supported by this fake")
	default:
		return nil, p.fail("Invalid function name; function: %s", name)
	}
	p.punct("(")
	path, err := p.path()
	if err != nil {
		return nil, err
	}
	if !p.punct(",") {
		return nil, p.syntax()
	}
	def, err := p.term()
	if err != nil {
		return nil, err
	}
	if !p.punct(")") {
		return nil, p.syntax()
	}
	return func(it item) (types.AttributeValue, error) {
		if v, ok := it[path]; ok {
			return v, nil
		}
		return def(it)
	}, nil
}
