package cmd

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/text"
)

// TestServerFailureIsWordedAsTheServers: a 5xx is the server failing, in
// the API's form or not (a crashed handler answers plain text); the line
// says what it answered and how often it was asked, and does not send the
// user after their configuration. An answer that is not a 5xx and not in
// the API's form still points at the endpoint.
func TestServerFailureIsWordedAsTheServers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    []string
		notWant []string
	}{
		{
			name: "500 plain text",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			},
			want:    []string{"HTTP 500 Internal Server Error", "server", "after 3 attempts"},
			notWant: []string{"--endpoint-url", "not an answer"},
		},
		{
			name: "500 of the API",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				w.Header().Set("x-amzn-RequestId", "req-5e7f")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(`{"__type":"InternalFailure","message":"We encountered an internal error."}`))
			},
			want:    []string{"HTTP 500 Internal Server Error", "InternalFailure: We encountered an internal error.", "request id req-5e7f", "server", "after 3 attempts"},
			notWant: []string{"--endpoint-url", "not an answer"},
		},
		{
			name: "503 of the API",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				w.Header().Set("x-amzn-RequestId", "req-503")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"__type":"ServiceUnavailable","message":"try later"}`))
			},
			want:    []string{"HTTP 503 Service Unavailable", "ServiceUnavailable", "request id req-503", "server"},
			notWant: []string{"--endpoint-url"},
		},
		{
			name: "404 of a web server",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "<html>not found</html>", http.StatusNotFound)
			},
			want: []string{"answered HTTP 404 Not Found, which is not an answer of the Kinesis API: check --endpoint-url"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				tc.handler(w, r)
			}))
			t.Cleanup(srv.Close)
			cfg := aws.Config{
				Region:      "us-east-1",
				Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
				HTTPClient:  newHTTPClient(),
				Retryer:     awscall.KinesisRetryer,
			}
			c := newKinesisClient(cfg, clientConfig{EndpointURL: srv.URL})
			_, err := c.DescribeStreamSummary(context.Background(), &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("orders")})
			if err == nil {
				t.Fatal("no error")
			}
			line := text.OneLine(wordError(err, errContext{stream: "orders", region: "us-east-1", endpoint: srv.URL}))
			t.Log(line)
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("%q\nlacks %q", line, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(line, w) {
					t.Errorf("%q\nholds %q", line, w)
				}
			}
			if strings.Contains(tc.name, "500") && calls.Load() != 3 {
				t.Errorf("%d calls, want 3 (the line says so)", calls.Load())
			}
		})
	}
}
