package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/awsdebug"
)

// Timeouts of the HTTP client. The SDK's default client dials for up to 30 s
// and retries connection errors, so a black-holed endpoint takes about a
// minute and a half to fail; these keep it to seconds.
const (
	dialTimeout           = 5 * time.Second
	tlsHandshakeTimeout   = 5 * time.Second
	responseHeaderTimeout = 10 * time.Second // every Kinesis call answers in well under this
	// operationTimeout bounds one call with all its retries, so a silent
	// endpoint ends in an error within seconds, not minutes.
	operationTimeout = 25 * time.Second
	// streamTimeout bounds a SubscribeToShard whose caller set no deadline:
	// its event stream lasts up to 5 minutes after the call returns.
	streamTimeout = 5*time.Minute + 30*time.Second
)

// clientConfig is what decides how the SDK client is built.
type clientConfig struct {
	Region      string // explicit region (flag or ARN); "" = SDK default chain
	Profile     string
	EndpointURL string // --endpoint-url; wins over every configured endpoint
	Debug       *awsdebug.Logger
}

// loadAWSConfig resolves configuration the way AWS users expect: the default
// credential chain, profiles and SSO, AWS_REGION, AWS_ENDPOINT_URL(_KINESIS)
// and shared-config service endpoints. The HTTP client is a BuildableClient
// so that AWS_CA_BUNDLE (which needs WithTransportOptions) keeps working.
func loadAWSConfig(ctx context.Context, cc clientConfig) (aws.Config, error) {
	// The SDK's own log lines (such as the credential chain's "falling back
	// to IMDSv1" warning) would be a second line beside the one error; with
	// --debug they go to stderr with the request log.
	var logger logging.Logger = logging.Nop{}
	if d := cc.Debug; d != nil {
		logger = logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			d.Printf("SDK %s: %s", c, redactSecrets(fmt.Sprintf(format, v...)))
		})
	}
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(newHTTPClient()),
		config.WithRetryer(awscall.KinesisRetryer),
		config.WithLogger(logger),
	}
	if cc.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cc.Profile))
	}
	if cc.Region != "" {
		opts = append(opts, config.WithRegion(cc.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, &configError{err: err, profile: cc.Profile}
	}
	if cfg.Region == "" {
		return aws.Config{}, errNoRegion
	}
	if !regionRE.MatchString(cfg.Region) {
		// The SDK would send nothing either, but say so in its own words
		// ("failed to bind endpoint params").
		if cc.Region != "" {
			return aws.Config{}, usageErrorf("--region %q is not an AWS region name such as us-east-1", cc.Region)
		}
		return aws.Config{}, fmt.Errorf("the configured AWS region %q (AWS_REGION or the profile's region) is not a region name such as us-east-1", cfg.Region)
	}
	return cfg, nil
}

// regionRE is the shape of a region name (us-east-1, us-gov-west-1,
// cn-north-1, and test regions such as local).
var regionRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// newHTTPClient is the HTTP client of every Kinesis client: a
// BuildableClient (so that AWS_CA_BUNDLE, which needs
// WithTransportOptions, keeps working) with the timeouts above.
func newHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = dialTimeout }).
		WithTransportOptions(func(t *http.Transport) {
			// SubscribeToShard streams over HTTP/2 (over TLS; plain
			// http:// endpoints stay HTTP/1.1). A transport with a TLS
			// configuration of its own (AWS_CA_BUNDLE) offers HTTP/2 only
			// with this set.
			t.ForceAttemptHTTP2 = true
			t.TLSHandshakeTimeout = tlsHandshakeTimeout
			t.ResponseHeaderTimeout = responseHeaderTimeout
			// tail keeps one connection per busy shard.
			t.MaxIdleConns = 1024
			t.MaxIdleConnsPerHost = 1024
		})
}

var errNoRegion = errors.New("no AWS region is set: pass --region, set AWS_REGION, or set region in your AWS profile")

type configError struct {
	err     error
	profile string
}

func (e *configError) Error() string {
	var missing config.SharedConfigProfileNotExistError
	if errors.As(e.err, &missing) {
		return fmt.Sprintf("AWS profile %q was not found in the shared config or credentials files", missing.Profile)
	}
	return "cannot load AWS configuration: " + e.err.Error()
}

func (e *configError) Unwrap() error { return e.err }

// newKinesisClient builds the client from resolved configuration.
func newKinesisClient(cfg aws.Config, cc clientConfig) *kinesis.Client {
	return kinesis.NewFromConfig(cfg, func(o *kinesis.Options) {
		o.APIOptions = append(o.APIOptions, withOperationTimeout(operationTimeout), withRedactedErrors)
		if cc.EndpointURL != "" {
			o.BaseEndpoint = aws.String(cc.EndpointURL)
		}
		if cc.Debug != nil {
			o.APIOptions = append(o.APIOptions, cc.Debug.Middleware())
		}
	})
}

// newDynamoClient builds a DynamoDB client (lease tables) from the same
// configuration. --endpoint-url is Kinesis's; DynamoDB follows
// AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL and shared config.
func newDynamoClient(cfg aws.Config, cc clientConfig) *dynamodb.Client {
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.Retryer = awscall.DynamoRetryer()
		o.APIOptions = append(o.APIOptions, withOperationTimeout(operationTimeout), withRedactedErrors)
		if cc.Debug != nil {
			o.APIOptions = append(o.APIOptions, cc.Debug.Middleware())
		}
	})
}

// endpointOf is the endpoint the client talks to, for messages.
func endpointOf(c *kinesis.Client) string {
	o := c.Options()
	if o.BaseEndpoint != nil {
		return *o.BaseEndpoint
	}
	return fmt.Sprintf("https://kinesis.%s.amazonaws.com", o.Region)
}

// validateEndpointURL checks --endpoint-url before anything is sent.
func validateEndpointURL(raw string) (warning string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--endpoint-url %q is not an http(s) URL such as http://127.0.0.1:4568", raw)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Sprintf("--endpoint-url %s is plain http to a host that is not loopback: requests (signed, not encrypted) cross the network in the clear", raw), nil
	}
	return "", nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// withOperationTimeout gives every call (all attempts together) a deadline
// unless its context already has a sooner one. SubscribeToShard is the
// exception: its event stream is read after the call returns, in the
// call's context, so a deadline cancelled on return would end the stream
// at once. It keeps its caller's deadline (the subscription reader sets
// one per subscription), or gets streamTimeout, which is left to expire.
func withOperationTimeout(d time.Duration) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("kinesis-shards-operation-timeout",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if _, stream := in.Parameters.(*kinesis.SubscribeToShardInput); stream {
					if _, ok := ctx.Deadline(); !ok {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, streamTimeout)
						time.AfterFunc(streamTimeout, cancel) // not on return: the stream outlives the call
					}
					return next.HandleInitialize(ctx, in)
				}
				if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > d {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, d)
					defer cancel()
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}

// withRedactedErrors wraps an error whose text holds something that looks
// like a credential (a service or proxy quoting the request's Authorization
// header or session token) so that its text is redacted wherever it is
// printed, --debug included; errors.As still finds the SDK's error inside.
// It sits in the Deserialize step, inside the retry loop, so the errors of
// earlier attempts that --debug lists are covered too.
func withRedactedErrors(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("kinesis-shards-redact-errors",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if err != nil {
				if s := err.Error(); redactSecrets(s) != s {
					err = &redactedError{err: err}
				}
			}
			return out, md, err
		}), middleware.Before)
}

// redactedError is an error whose text is redacted.
type redactedError struct{ err error }

func (e *redactedError) Error() string { return redactSecrets(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }
