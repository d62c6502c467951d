package kstream

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ErrBadStream marks a STREAM argument that is neither a valid name nor a
// valid stream ARN.
var ErrBadStream = errors.New("invalid stream")

// Ref names a stream: by name, or by ARN (which also fixes the region and the
// account). Calls prefer the ARN when there is one.
type Ref struct {
	Name      string
	ARN       string
	Partition string
	Region    string
	Account   string
}

var (
	nameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)
	// arn:<partition>:kinesis:<region>:<12-digit account>:stream/<name>
	arnRE = regexp.MustCompile(`^arn:(aws[a-zA-Z-]*):kinesis:([a-z0-9-]+):([0-9]{12}):stream/([a-zA-Z0-9_.-]{1,128})$`)
)

// ParseRef reads a STREAM argument.
func ParseRef(s string) (Ref, error) {
	if strings.HasPrefix(s, "arn:") {
		m := arnRE.FindStringSubmatch(s)
		if m == nil {
			return Ref{}, fmt.Errorf("%w: %q is not a Kinesis stream ARN (arn:<partition>:kinesis:<region>:<12-digit account>:stream/<name>)", ErrBadStream, s)
		}
		return Ref{Name: m[4], ARN: s, Partition: m[1], Region: m[2], Account: m[3]}, nil
	}
	if !nameRE.MatchString(s) {
		return Ref{}, fmt.Errorf("%w: %q is not a stream name (1 to 128 characters of a-z, A-Z, 0-9, _ . -) or a stream ARN", ErrBadStream, s)
	}
	return Ref{Name: s}, nil
}

// String is the name, for messages.
func (r Ref) String() string { return r.Name }

// NameInput and ARNInput are the values to put in an input's StreamName and
// StreamARN fields: the ARN alone when known (it is exact and works for
// StreamARN-only calls), else the name alone.
func (r Ref) NameInput() *string {
	if r.ARN != "" {
		return nil
	}
	return aws.String(r.Name)
}

// ARNInput: see NameInput.
func (r Ref) ARNInput() *string {
	if r.ARN == "" {
		return nil
	}
	return aws.String(r.ARN)
}
