package producer

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// keyFor is the partition key of an input line: Options.Key, the
// Options.KeyField of the line, or 8 random bytes in hex.
func (p *putter) keyFor(l inputLine) (string, error) {
	switch {
	case p.opts.Key != "":
		return p.opts.Key, nil
	case p.opts.KeyField != "":
		k, err := JSONField(l.data, p.opts.KeyField)
		if err != nil {
			return "", fmt.Errorf("line %d: %w", l.n, err)
		}
		if err := CheckPartitionKey(k); err != nil {
			return "", fmt.Errorf("line %d: field %s: %w", l.n, p.opts.KeyField, err)
		}
		return k, nil
	default:
		var b [8]byte
		for i := range b {
			b[i] = byte(p.opts.Rand.Uint32())
		}
		return hex.EncodeToString(b[:]), nil
	}
}

// JSONField reads a dotted path from a JSON object; strings are used as
// they are, numbers and booleans as written.
func JSONField(line []byte, path string) (string, error) {
	var cur json.RawMessage = line
	for _, part := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(cur, &obj); err != nil || obj == nil {
			return "", fmt.Errorf("not a JSON object with a field %q", path)
		}
		v, ok := obj[part]
		if !ok {
			return "", fmt.Errorf("no field %q in the JSON line", path)
		}
		cur = v
	}
	var s string
	if err := json.Unmarshal(cur, &s); err == nil {
		return s, nil
	}
	t := strings.TrimSpace(string(cur))
	if t == "" || t == "null" || t[0] == '{' || t[0] == '[' {
		return "", fmt.Errorf("field %q is %s, not a string or number", path, jsonKind(t))
	}
	return t, nil
}

func jsonKind(t string) string {
	switch {
	case t == "null":
		return "null"
	case strings.HasPrefix(t, "{"):
		return "an object"
	case strings.HasPrefix(t, "["):
		return "an array"
	}
	return "empty"
}

// CheckPartitionKey applies the service's rule: 1 to 256 Unicode characters.
func CheckPartitionKey(k string) error {
	n := utf8.RuneCountInString(k)
	if n < 1 || n > maxKeyChars {
		return fmt.Errorf("a partition key must have 1 to %d characters, not %d", maxKeyChars, n)
	}
	if !utf8.ValidString(k) {
		return errors.New("a partition key must be valid UTF-8")
	}
	return nil
}
