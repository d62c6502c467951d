package wirestub

import (
	"bytes"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
)

// BodyClient is a Kinesis client whose every call is answered with status
// and body, without a network or a server: for tests and benchmarks of
// response decoding on exact bytes (PageBody gives a full page's). It
// makes one attempt per call.
func BodyClient(status int, body []byte) *kinesis.Client {
	return kinesis.New(kinesis.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint:     aws.String("http://127.0.0.1:1"),
		HTTPClient:       bodyDoer{status, body},
		RetryMaxAttempts: 1,
	})
}

type bodyDoer struct {
	status int
	body   []byte
}

func (c bodyDoer) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.1")
	return &http.Response{StatusCode: c.status, Header: h, Body: io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)), Request: req}, nil
}
