package cmd

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/logging"

	"github.com/kinesis-shards/kinesis-shards/internal/awsdebug"
)

// isolateAWSEnv points the SDK at empty config files and clears every AWS_*
// variable the developer's shell may carry, so tests see only what they set.
func isolateAWSEnv(t *testing.T) (configFile string) {
	t.Helper()
	dir := t.TempDir()
	configFile = filepath.Join(dir, "config")
	creds := filepath.Join(dir, "credentials")
	for _, p := range []string{configFile, creds} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range os.Environ() {
		for i := range len(kv) {
			if kv[i] == '=' {
				if k := kv[:i]; len(k) > 4 && k[:4] == "AWS_" {
					t.Setenv(k, "")
				}
				break
			}
		}
	}
	t.Setenv("AWS_CONFIG_FILE", configFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	return configFile
}

const sharedConfig = `[default]
region = eu-west-1

[profile ops]
region = ap-southeast-2
services = local

[profile plain]
region = us-west-2

[services local]
kinesis =
  endpoint_url = http://shared.example:4568
`

func TestConfigResolutionOrder(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		cc           clientConfig
		wantRegion   string
		wantEndpoint string // "" = none configured
	}{
		{name: "default profile region", wantRegion: "eu-west-1"},
		{name: "AWS_REGION over profile", env: map[string]string{"AWS_REGION": "us-east-2"}, wantRegion: "us-east-2"},
		{name: "--region over AWS_REGION", env: map[string]string{"AWS_REGION": "us-east-2"}, cc: clientConfig{Region: "sa-east-1"}, wantRegion: "sa-east-1"},
		{name: "AWS_PROFILE picks profile and its service endpoint", env: map[string]string{"AWS_PROFILE": "ops"},
			wantRegion: "ap-southeast-2", wantEndpoint: "http://shared.example:4568"},
		{name: "--profile over AWS_PROFILE", env: map[string]string{"AWS_PROFILE": "ops"}, cc: clientConfig{Profile: "plain"},
			wantRegion: "us-west-2"},
		{name: "AWS_ENDPOINT_URL_KINESIS over shared config", env: map[string]string{"AWS_PROFILE": "ops", "AWS_ENDPOINT_URL_KINESIS": "http://env-kinesis:1"},
			wantRegion: "ap-southeast-2", wantEndpoint: "http://env-kinesis:1"},
		{name: "AWS_ENDPOINT_URL when nothing more specific", env: map[string]string{"AWS_ENDPOINT_URL": "http://env-any:1"},
			wantRegion: "eu-west-1", wantEndpoint: "http://env-any:1"},
		{name: "--endpoint-url over everything", env: map[string]string{"AWS_PROFILE": "ops", "AWS_ENDPOINT_URL_KINESIS": "http://env-kinesis:1", "AWS_ENDPOINT_URL": "http://env-any:1"},
			cc: clientConfig{EndpointURL: "http://flag:1"}, wantRegion: "ap-southeast-2", wantEndpoint: "http://flag:1"},
		{name: "ignore configured endpoints", env: map[string]string{"AWS_ENDPOINT_URL_KINESIS": "http://env-kinesis:1", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"},
			wantRegion: "eu-west-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfgFile := isolateAWSEnv(t)
			if err := os.WriteFile(cfgFile, []byte(sharedConfig), 0o600); err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := loadAWSConfig(context.Background(), tt.cc)
			if err != nil {
				t.Fatal(err)
			}
			c := newKinesisClient(cfg, tt.cc)
			o := c.Options()
			if o.Region != tt.wantRegion {
				t.Errorf("region = %q, want %q", o.Region, tt.wantRegion)
			}
			if got := aws.ToString(o.BaseEndpoint); got != tt.wantEndpoint {
				t.Errorf("endpoint = %q, want %q", got, tt.wantEndpoint)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	t.Run("unknown profile", func(t *testing.T) {
		isolateAWSEnv(t)
		_, err := loadAWSConfig(context.Background(), clientConfig{Profile: "nope"})
		if err == nil || err.Error() != `AWS profile "nope" was not found in the shared config or credentials files` {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no region", func(t *testing.T) {
		isolateAWSEnv(t)
		_, err := loadAWSConfig(context.Background(), clientConfig{})
		if err != errNoRegion {
			t.Fatalf("err = %v, want errNoRegion", err)
		}
	})
}

// The SDK's own log lines (the credential chain's "falling back to IMDSv1"
// on a machine without credentials) never reach stderr beside the one
// error line; with --debug they join the debug log, redacted.
func TestSDKLogOnlyWithDebug(t *testing.T) {
	isolateAWSEnv(t)
	cfg, err := loadAWSConfig(context.Background(), clientConfig{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Logger.(logging.Nop); !ok {
		t.Fatalf("logger without --debug is %T, want logging.Nop", cfg.Logger)
	}
	var buf bytes.Buffer
	cfg, err = loadAWSConfig(context.Background(), clientConfig{Region: "us-east-1", Debug: &awsdebug.Logger{W: &buf}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Logf(logging.Warn, "falling back to IMDSv1, Credential=AKIAIOSFODNN7EXAMPLE/x")
	if got := buf.String(); got != "debug: SDK WARN: falling back to IMDSv1, Credential=[redacted]\n" {
		t.Fatalf("debug log %q", got)
	}
}

// With AWS_CA_BUNDLE set, a plain *http.Client makes LoadDefaultConfig fail
// (or, ignored, leaves an unsigned client); ours must load and sign.
func TestCABundleWorks(t *testing.T) {
	isolateAWSEnv(t)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CA_BUNDLE", writeTestCA(t))
	cfg, err := loadAWSConfig(context.Background(), clientConfig{})
	if err != nil {
		t.Fatalf("loadAWSConfig with AWS_CA_BUNDLE: %v", err)
	}
	creds, err := cfg.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AKIDEXAMPLE" {
		t.Fatalf("credentials = %+v, %v", creds, err)
	}
}

func writeTestCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestValidateEndpointURL(t *testing.T) {
	for _, tt := range []struct {
		in      string
		wantErr bool
		warn    bool
	}{
		{"http://127.0.0.1:4568", false, false},
		{"http://localhost:4568", false, false},
		{"http://[::1]:4568", false, false},
		{"https://kinesis.example.com", false, false},
		{"http://kinesis.example.com", false, true},
		{"ftp://x", true, false},
		{"127.0.0.1:4568", true, false},
		{"http://", true, false},
		{"", true, false},
	} {
		warn, err := validateEndpointURL(tt.in)
		if (err != nil) != tt.wantErr || (warn != "") != tt.warn {
			t.Errorf("%q: warn=%q err=%v", tt.in, warn, err)
		}
	}
}
