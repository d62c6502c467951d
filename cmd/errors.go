package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go"

	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

// Exit codes (SPEC.md).
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// exitError carries an exit code with an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

func usageErrorf(format string, args ...any) error {
	return usageError(fmt.Errorf(format, args...))
}

// errDeclined: the user said no at a confirmation prompt.
var errDeclined = &exitError{code: exitInterrupted, err: errors.New("declined: nothing was changed")}

// describeError turns any error into one sentence and an exit code. This is
// the one place where service, network and configuration errors are worded.
func describeError(ctx context.Context, err error, ec errContext) (string, int) {
	code := exitFailure
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) {
		return "interrupted", exitInterrupted
	}
	return oneLine(wordError(err, ec)), code
}

func wordError(err error, ec errContext) string {
	where := ""
	if ec.region != "" {
		where = " in region " + ec.region
	}
	var (
		notFound *types.ResourceNotFoundException
		inUse    *types.ResourceInUseException
		limit    *types.LimitExceededException
		denied   *types.AccessDeniedException
		invalid  *types.InvalidArgumentException
		valid    *types.ValidationException
		timeout  *kstream.TimeoutError
		apiErr   smithy.APIError
		urlErr   *url.Error
	)
	switch {
	case errors.As(err, &notFound):
		msg := notFound.ErrorMessage()
		if ec.stream != "" && !strings.Contains(strings.ToLower(msg), "shard") {
			return fmt.Sprintf("stream %q was not found%s (endpoint %s)", ec.stream, where, ec.endpoint)
		}
		return "not found" + where + ": " + msg
	case errors.As(err, &inUse):
		s := "the stream"
		if ec.stream != "" {
			s = "stream " + ec.stream
		}
		return fmt.Sprintf("%s is busy (being created, updated or deleted); try again when it is ACTIVE: %s", s, inUse.ErrorMessage())
	case errors.As(err, &limit):
		return "limit exceeded (not retried): " + limit.ErrorMessage()
	case errors.As(err, &denied):
		return "access denied" + where + ": " + denied.ErrorMessage()
	case errors.As(err, &invalid):
		return "the service rejected the request: " + invalid.ErrorMessage()
	case errors.As(err, &valid):
		return "the service rejected the request: " + valid.ErrorMessage()
	case errors.As(err, &timeout):
		return timeout.Error()
	case isCredentialsError(err):
		return "no usable AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, choose a profile with --profile or AWS_PROFILE, or run `aws sso login` (" + credentialsCause(err) + ")"
	case errors.As(err, &urlErr):
		host := urlErr.URL
		if u, perr := url.Parse(urlErr.URL); perr == nil {
			host = u.Scheme + "://" + u.Host
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Sprintf("cannot reach the Kinesis endpoint %s: timed out", host)
		}
		return fmt.Sprintf("cannot reach the Kinesis endpoint %s: %s", host, rootCause(err))
	case errors.Is(err, context.DeadlineExceeded):
		if ec.endpoint != "" {
			return "timed out waiting for the Kinesis endpoint " + ec.endpoint
		}
		return "timed out"
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode() + ": " + apiErr.ErrorMessage()
	}
	return err.Error()
}

// The SDK wraps credential failures in plain fmt errors; these phrases are
// its own and stable across versions.
func isCredentialsError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "get identity: get credentials") ||
		strings.Contains(s, "failed to refresh cached credentials") ||
		strings.Contains(s, "failed to retrieve credentials")
}

func credentialsCause(err error) string {
	s := err.Error()
	if i := strings.Index(s, "failed to refresh cached credentials, "); i >= 0 {
		s = s[i+len("failed to refresh cached credentials, "):]
	} else if i := strings.Index(s, "get credentials: "); i >= 0 {
		s = s[i+len("get credentials: "):]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func rootCause(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		err = u
	}
	return err.Error()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
