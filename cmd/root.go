package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/spf13/cobra"

	"github.com/kinesis-shards/kinesis-shards/internal/awsdebug"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
	"github.com/kinesis-shards/kinesis-shards/internal/leases"
)

// Set by the release build (-ldflags -X).
var (
	version = ""
	commit  = ""
	date    = ""
)

// versionString is what --version prints.
func versionString() string {
	v, c, d := version, commit, date
	if v == "" {
		v = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok {
			if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
				v = bi.Main.Version
			}
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					if c == "" {
						c = s.Value
					}
				case "vcs.time":
					if d == "" {
						d = s.Value
					}
				}
			}
		}
	}
	s := v
	if c != "" {
		if len(c) > 12 {
			c = c[:12]
		}
		s += " (commit " + c
		if d != "" {
			s += ", built " + d
		}
		s += ")"
	}
	return s
}

// GlobalOptions are the flags every command takes.
type GlobalOptions struct {
	Region      string
	Profile     string
	EndpointURL string
	Output      string
	NoColor     bool
	Debug       bool
}

// Factory carries what commands share: the streams, the global options and
// the way to build clients. Tests build one with TestIO and their own
// client constructors.
type Factory struct {
	IO     *IOStreams
	Global GlobalOptions
	Now    func() time.Time

	// KinesisClient builds the Kinesis client for a region ("" = the
	// configured default). Replaced in tests.
	KinesisClient func(ctx context.Context, region string) (*kinesis.Client, error)
	// DynamoClient builds the DynamoDB client for lease tables.
	DynamoClient func(ctx context.Context, region string) (*dynamodb.Client, error)

	debugLog *awsdebug.Logger
	// What the current command is about, for error messages.
	errCtx errContext
}

// errContext is what error messages may name.
type errContext struct {
	stream   string
	region   string
	endpoint string
}

// NewFactory returns the factory for a real run.
func NewFactory(ios *IOStreams) *Factory {
	f := &Factory{IO: ios, Now: time.Now}
	f.KinesisClient = f.defaultKinesisClient
	f.DynamoClient = f.defaultDynamoClient
	return f
}

func (f *Factory) defaultDynamoClient(ctx context.Context, region string) (*dynamodb.Client, error) {
	cc := clientConfig{Region: region, Profile: f.Global.Profile}
	if f.Global.Debug {
		cc.Debug = f.debug()
	}
	cfg, err := loadAWSConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	return newDynamoClient(cfg, cc), nil
}

// Dynamo builds the DynamoDB client for the region of a stream's client.
func (f *Factory) Dynamo(ctx context.Context, k *kinesis.Client) (*dynamodb.Client, error) {
	return f.DynamoClient(ctx, k.Options().Region)
}

// KinesisWithLeases is KinesisFor, and when table is set it also puts
// the DynamoDB client of that lease table, in the stream's region, into
// *lc (tail --lease-table, tree and dashboard --kcl-table).
func (f *Factory) KinesisWithLeases(ctx context.Context, ref kstream.Ref, table string, lc *leases.DynamoAPI) (*kinesis.Client, error) {
	client, err := f.KinesisFor(ctx, ref)
	if err != nil || table == "" {
		return client, err
	}
	dc, err := f.Dynamo(ctx, client)
	if err != nil {
		return nil, err
	}
	*lc = dc
	return client, nil
}

func (f *Factory) defaultKinesisClient(ctx context.Context, region string) (*kinesis.Client, error) {
	cc := clientConfig{Region: region, Profile: f.Global.Profile, EndpointURL: f.Global.EndpointURL}
	if f.Global.Debug {
		cc.Debug = f.debug()
	}
	cfg, err := loadAWSConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	c := newKinesisClient(cfg, cc)
	if f.Global.Debug {
		src := "default chain"
		if f.Global.EndpointURL != "" {
			src = "--endpoint-url"
		}
		f.debug().Printf("config region=%s endpoint=%s (%s) profile=%q", cfg.Region, endpointOf(c), src, f.Global.Profile)
	}
	return c, nil
}

func (f *Factory) debug() *awsdebug.Logger {
	if f.debugLog == nil {
		f.debugLog = &awsdebug.Logger{W: f.IO.ErrOut}
	}
	return f.debugLog
}

// Debugf writes a --debug line; nothing without --debug.
func (f *Factory) Debugf(format string, args ...any) {
	if f.Global.Debug {
		f.debug().Printf(format, args...)
	}
}

// Kinesis resolves a STREAM argument ("" for none) and builds the client
// for it (the live completions).
func (f *Factory) Kinesis(ctx context.Context, streamArg string) (*kinesis.Client, kstream.Ref, error) {
	ref, err := resolveStream(streamArg, f.Global.Region)
	if err != nil {
		return nil, ref, err
	}
	c, err := f.KinesisFor(ctx, ref)
	return c, ref, err
}

// KinesisFor builds the client for a stream that validation resolved: in
// an ARN's region, else in --region or the configured default.
func (f *Factory) KinesisFor(ctx context.Context, ref kstream.Ref) (*kinesis.Client, error) {
	region := f.Global.Region
	if ref.Region != "" {
		region = ref.Region
	}
	if ref.Name != "" {
		f.errCtx.stream = ref.Name
	}
	c, err := f.KinesisClient(ctx, region)
	if err != nil {
		return nil, err
	}
	f.errCtx.region = c.Options().Region
	f.errCtx.endpoint = endpointOf(c)
	return c, nil
}

// NewRootCmd builds the command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	root := newRoot(f)
	root.AddCommand(
		newStreamsCmd(f, nil),
		newTreeCmd(f, nil),
		newTailCmd(f, nil),
		newPutCmd(f, nil),
		newCreateCmd(f, nil),
		newSplitCmd(f, nil),
		newMergeCmd(f, nil),
		newScaleCmd(f, nil),
		newHotCmd(f, nil),
		newLagCmd(f, nil),
		newDashboardCmd(f, nil),
		newConsumersCmd(f, nil),
		newLocalCmd(f, nil),
	)
	registerCompletions(root, f)
	return root
}

// newRoot is the root command with the global flags and no commands (a
// test adds the one it checks).
func newRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "kinesis-shards",
		Short: "See, read and reshard Amazon Kinesis Data Streams shards",
		Long: `kinesis-shards shows how a stream's shards came to be (the lineage of splits
and merges), reads a stream keeping every partition key in order across
reshards, and splits, merges and rescales shards after a preview.`,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			if f.Global.NoColor {
				f.IO.ColorDisabled = true
			}
			if f.Global.EndpointURL != "" {
				warn, err := validateEndpointURL(f.Global.EndpointURL)
				if err != nil {
					return usageError(err)
				}
				if warn != "" {
					fmt.Fprintln(f.IO.ErrOut, "warning: "+warn)
				}
			}
			return nil
		},
	}
	root.SetVersionTemplate("kinesis-shards {{.Version}}\n")
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError(err) })

	pf := root.PersistentFlags()
	pf.StringVar(&f.Global.Region, "region", "", "AWS region (default: AWS_REGION or the profile's region)")
	pf.StringVar(&f.Global.Profile, "profile", "", "AWS shared-config profile (default: AWS_PROFILE or default)")
	pf.StringVar(&f.Global.EndpointURL, "endpoint-url", "", "Kinesis endpoint URL; wins over AWS_ENDPOINT_URL(_KINESIS) and shared config")
	pf.StringVarP(&f.Global.Output, "output", "o", "", "output format (per command; see its help)")
	pf.BoolVar(&f.Global.NoColor, "no-color", false, "no colour (also NO_COLOR=1)")
	pf.BoolVar(&f.Global.Debug, "debug", false, "log every AWS request (operation, stream, shard, latency, retries) to stderr")
	return root
}

// Execute runs the command line and returns the exit code.
func Execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first Ctrl-C stops the command cleanly (tail writes out what it
	// read and saves its checkpoint); a second one, for a stop that takes
	// too long (a stdout that no longer reads), ends the process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	// A closed stdout (`| head`) becomes an EPIPE error we can handle
	// (saving tail's checkpoint) instead of killing the process.
	signal.Ignore(syscall.SIGPIPE)
	f := NewFactory(SystemIO())
	return run(ctx, f, os.Args[1:])
}

// run executes args against f and prints a failure as one line.
func run(ctx context.Context, f *Factory, args []string) int {
	return execute(ctx, f, NewRootCmd(f), args)
}

// execute runs args on root: the exit code, and a failure as one line on
// stderr.
func execute(ctx context.Context, f *Factory, root *cobra.Command, args []string) int {
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	// A command that cannot run (the root, a group) fails only in cobra's
	// own lookup: an unknown command, a usage error. Flag and argument
	// errors are usage errors already.
	if c != nil && !c.Runnable() {
		err = usageError(err)
	}
	if isBrokenPipe(err) {
		return exitOK // the reader of stdout went away: nothing to say
	}
	msg, code := describeError(ctx, err, f.errCtx)
	if code == exitInterrupted {
		fmt.Fprintln(f.IO.ErrOut, msg)
	} else {
		fmt.Fprintln(f.IO.ErrOut, "error: "+msg)
	}
	return code
}
