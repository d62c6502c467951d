package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awserr"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
)

// Exit codes (the README's table).
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

// usageErr is a command line that is wrong in itself: exit 2, and nothing
// was sent. Validation returns it; so do cobra's flag and argument errors
// (through the root's flag error function and the Args validators).
type usageErr struct{ err error }

func (e *usageErr) Error() string { return e.err.Error() }
func (e *usageErr) Unwrap() error { return e.err }

func usageError(err error) error { return &usageErr{err: err} }

func usageErrorf(format string, args ...any) error {
	return usageError(fmt.Errorf(format, args...))
}

// errDeclined: the user said no at a confirmation prompt.
var errDeclined = &exitError{code: exitInterrupted, err: errors.New("declined: nothing was changed")}

// describeError turns any error into one sentence and an exit code. This is
// the one place where service, network and configuration errors are worded.
func describeError(ctx context.Context, err error, ec errContext) (string, int) {
	code := exitFailure
	var (
		ue *usageErr
		ee *exitError
	)
	switch {
	case errors.As(err, &ue):
		code = exitUsage
	case errors.As(err, &ee):
		code = ee.code
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) {
		return "interrupted", exitInterrupted
	}
	return text.OneLine(wordError(err, ec)), code
}

// wordError is the sentence for err, with anything that looks like a
// credential taken out: a service (or a proxy in front of it) may quote the
// request's headers in its message, and we quote its message.
func wordError(err error, ec errContext) string {
	return redactSecrets(wordErrorRaw(err, ec))
}

func wordErrorRaw(err error, ec errContext) string {
	var noted *notedError
	if errors.As(err, &noted) {
		return wordErrorRaw(noted.err, ec) + "; " + noted.note
	}
	var lost *outcomeUnknownError
	if errors.As(err, &lost) {
		return wordErrorRaw(lost.err, ec) + "; " + lost.note
	}
	where := ""
	if ec.region != "" {
		where = " in region " + ec.region
	}
	// The service the failed call was for: Kinesis, or DynamoDB for a
	// lease table, whose endpoint is not ec.endpoint.
	class := awserr.Classify(err)
	service, endpoint := "Kinesis", ec.endpoint
	if class.Service != "" && class.Service != "Kinesis" {
		service, endpoint = class.Service, ""
	}
	var (
		timeout *kstream.TimeoutError
		urlErr  *url.Error
		respErr *smithyhttp.ResponseError
	)
	switch {
	case class.Kind == awserr.NotFound && service == "Kinesis":
		msg := class.Message
		if ec.stream != "" && !strings.Contains(strings.ToLower(msg), "shard") {
			return fmt.Sprintf("stream %q was not found%s (endpoint %s)", ec.stream, where, ec.endpoint)
		}
		return "not found" + where + ": " + msg
	case class.Kind == awserr.InUse && service == "Kinesis":
		s := "the stream"
		if ec.stream != "" {
			s = "stream " + ec.stream
		}
		return fmt.Sprintf("%s is busy (being created, updated or deleted); try again when it is ACTIVE: %s", s, class.Message)
	case class.Kind == awserr.LimitExceeded:
		if awscall.ReadOnly(class.Operation) {
			return "limit exceeded (still after waiting and asking again): " + class.Message
		}
		return "limit exceeded (not retried): " + class.Message
	case class.Kind == awserr.AccessDenied:
		return "access denied" + where + ": " + class.Message
	case class.Kind == awserr.Invalid:
		return "the service rejected the request: " + class.Message
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
			return fmt.Sprintf("cannot reach the %s endpoint %s: timed out", service, host)
		}
		return fmt.Sprintf("cannot reach the %s endpoint %s: %s", service, host, rootCause(err))
	case errors.Is(err, context.DeadlineExceeded):
		if endpoint != "" {
			return fmt.Sprintf("timed out waiting for the %s endpoint %s", service, endpoint)
		}
		return fmt.Sprintf("timed out waiting for the %s endpoint", service)
	case errors.As(err, &respErr) && respErr.HTTPStatusCode() >= 500:
		return serverFailure(err, class, respErr, service, endpoint)
	case errors.As(err, &respErr) && class.Code == "":
		// An answer without an error code of the API, or one that does
		// not decode: a web server, a proxy or a load balancer, not the
		// service.
		if r := respErr.Response; r != nil && r.Response != nil && r.Request != nil && r.Request.URL != nil {
			endpoint = r.Request.URL.Scheme + "://" + r.Request.URL.Host
		}
		if endpoint == "" {
			endpoint = "the " + service + " endpoint"
		}
		status := respErr.HTTPStatusCode()
		check := "--endpoint-url, AWS_ENDPOINT_URL_KINESIS and AWS_ENDPOINT_URL"
		if service != "Kinesis" {
			check = "AWS_ENDPOINT_URL_" + strings.ToUpper(service) + " and AWS_ENDPOINT_URL"
		}
		return fmt.Sprintf("%s answered HTTP %d %s, which is not an answer of the %s API: check %s",
			endpoint, status, http.StatusText(status), service, check)
	case class.Code != "":
		return class.Code + ": " + class.Message
	}
	return err.Error()
}

// serverFailure words a 5xx: the server failed, whatever the form of its
// answer (a crashed handler answers plain text, a load balancer HTML), so
// the line says what it answered and how often it was asked, and does not
// send the user after their configuration.
func serverFailure(err error, class awserr.Class, respErr *smithyhttp.ResponseError, service, endpoint string) string {
	if r := respErr.Response; r != nil && r.Response != nil && r.Request != nil && r.Request.URL != nil {
		endpoint = r.Request.URL.Scheme + "://" + r.Request.URL.Host
	}
	// What the server said first: a status line cut to the terminal's
	// width still shows it.
	var b strings.Builder
	b.WriteString(service + " server failure: ")
	if class.Code != "" {
		b.WriteString(class.Code)
		if class.Message != "" && class.Message != class.Code {
			b.WriteString(": " + class.Message)
		}
		b.WriteString(" (")
	} else {
		b.WriteString("(no error code, ")
	}
	fmt.Fprintf(&b, "HTTP %d", class.Status)
	if t := http.StatusText(class.Status); t != "" {
		b.WriteString(" " + t)
	}
	if class.RequestID != "" {
		b.WriteString(", request id " + class.RequestID)
	}
	var maxErr *retry.MaxAttemptsError
	if errors.As(err, &maxErr) && maxErr.Attempt > 1 {
		fmt.Fprintf(&b, ", after %d attempts", maxErr.Attempt)
	}
	if endpoint != "" {
		b.WriteString(", from " + endpoint)
	}
	b.WriteString("); the failure is the server's, not the request's: try again later")
	return b.String()
}

// outcomeUnknownError is a call that changes the stream and got no answer
// (a dropped connection, a timeout, a 5xx): it may have taken effect, and
// note says what that means for the user.
type outcomeUnknownError struct {
	err  error
	note string
}

func (e *outcomeUnknownError) Error() string { return e.err.Error() + "; " + e.note }
func (e *outcomeUnknownError) Unwrap() error { return e.err }

// notedError is an error with a note the user needs beside it (what was
// done before it), worded after the error's own sentence.
type notedError struct {
	err  error
	note string
}

func (e *notedError) Error() string { return e.err.Error() + "; " + e.note }
func (e *notedError) Unwrap() error { return e.err }

// secretPatterns match what would let someone act as the user, or identify
// the key: the parts of a SigV4 Authorization header or query string, a
// session token header, and AWS access key ids.
var secretPatterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`(?i)((?:X-Amz-)?Credential=)[^\s,;&'"]+`), "${1}[redacted]"},
	{regexp.MustCompile(`(?i)((?:X-Amz-)?Signature=)[^\s,;&'"]+`), "${1}[redacted]"},
	{regexp.MustCompile(`(?i)(X-Amz-Security-Token\s*[=:]\s*)[^\s,;&'"]+`), "${1}[redacted]"},
	{regexp.MustCompile(`\b(?:AKIA|ASIA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b`), "[redacted access key id]"},
}

// redactSecrets takes credentials out of a message: by pattern, and the
// secret key and session token of the environment by value.
func redactSecrets(s string) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"} {
		if v := os.Getenv(name); len(v) >= 8 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
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
