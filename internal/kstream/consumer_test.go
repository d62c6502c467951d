package kstream_test

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/kinesis-shards/kinesis-shards/internal/awscall"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/emulator"
	"github.com/kinesis-shards/kinesis-shards/internal/kinesistest/fanout"
	"github.com/kinesis-shards/kinesis-shards/internal/kstream"
)

func TestMain(m *testing.M) { os.Exit(emulator.Main(m, emulator.Options{})) }

func TestValidateConsumerName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"tail", true}, {"a.b-c_D9", true}, {strings.Repeat("x", 128), true},
		{"", false}, {strings.Repeat("x", 129), false}, {"a b", false}, {"a/b", false}, {"zoë", false}, {"a:b", false},
	} {
		err := kstream.ValidateConsumerName(tt.name)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, kstream.ErrBadConsumerName)) {
			t.Errorf("%q: %v", tt.name, err)
		}
	}
}

func TestDefaultConsumerName(t *testing.T) {
	for _, tt := range []struct{ user, host, want string }{
		{"alice", "laptop.example.com", "kinesis-shards-alice-laptop.example.com"},
		{`CORP\bob`, "build host", "kinesis-shards-CORP-bob-build-host"},
		{"zoë", "h", "kinesis-shards-zo--h"},
		{"", "", "kinesis-shards-user-host"},
		{"///", "h", "kinesis-shards-user-h"},
		{"u", strings.Repeat("h", 200), ("kinesis-shards-u-" + strings.Repeat("h", 200))[:128]},
	} {
		got := kstream.DefaultConsumerName(tt.user, tt.host)
		if got != tt.want {
			t.Errorf("(%q, %q) = %q, want %q", tt.user, tt.host, got, tt.want)
		}
		if err := kstream.ValidateConsumerName(got); err != nil {
			t.Errorf("(%q, %q): %v", tt.user, tt.host, err)
		}
	}
}

// FuzzDefaultConsumerName: whatever the user and host, a name the service
// accepts, and the same one every time.
func FuzzDefaultConsumerName(f *testing.F) {
	f.Add("alice", "laptop")
	f.Add("", "\x00\xff")
	f.Fuzz(func(t *testing.T, user, host string) {
		a, b := kstream.DefaultConsumerName(user, host), kstream.DefaultConsumerName(user, host)
		if a != b || !regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`).MatchString(a) {
			t.Fatalf("(%q, %q) = %q, %q", user, host, a, b)
		}
	})
}

// stubRef is a stub and the Ref of its stream.
func newStub(t *testing.T, o fanout.StubOptions) (*fanout.Stub, *kinesis.Client, kstream.Ref) {
	t.Helper()
	s := fanout.NewStub(t, o)
	c := kinesis.New(kinesis.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("x", "x", ""),
		BaseEndpoint: aws.String(s.URL), RetryMaxAttempts: 1})
	ref, err := kstream.ParseRef(s.StreamARN)
	if err != nil {
		t.Fatal(err)
	}
	return s, c, ref
}

var fastWait = kstream.ConsumerWaitOptions{MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Timeout: 10 * time.Second}

func TestRegisterWaitDeregister(t *testing.T) {
	s, c, ref := newStub(t, fanout.StubOptions{CreatingPolls: 2, DeletingPolls: 1})
	cons, created, err := kstream.RegisterConsumer(t.Context(), c, ref, "reader")
	if err != nil || !created || cons.Status != types.ConsumerStatusCreating || !strings.HasPrefix(cons.ARN, s.StreamARN+"/consumer/reader:") {
		t.Fatalf("%+v %v %v", cons, created, err)
	}
	var seen []types.ConsumerStatus
	o := fastWait
	o.OnPoll = func(st types.ConsumerStatus, _ time.Duration) { seen = append(seen, st) }
	active, err := kstream.WaitConsumerActive(t.Context(), c, ref, "reader", o)
	if err != nil || active.Status != types.ConsumerStatusActive || active.ARN != cons.ARN {
		t.Fatalf("%+v %v", active, err)
	}
	if !slices.Equal(seen, []types.ConsumerStatus{"CREATING", "CREATING", "ACTIVE"}) {
		t.Fatalf("progress %v", seen)
	}
	if err := kstream.DeregisterConsumer(t.Context(), c, ref, "reader"); err != nil {
		t.Fatal(err)
	}
	seen = nil
	if err := kstream.WaitConsumerGone(t.Context(), c, ref, "reader", o); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []types.ConsumerStatus{"DELETING", ""}) || len(s.Consumers()) != 0 {
		t.Fatalf("progress %v, left %v", seen, s.Consumers())
	}
	if err := kstream.DeregisterConsumer(t.Context(), c, ref, "reader"); !errors.Is(err, kstream.ErrConsumerNotFound) ||
		err.Error() != `stream efo-stub has no consumer named "reader"` {
		t.Fatalf("deregister a second time: %v", err)
	}
}

func TestEnsureConsumer(t *testing.T) {
	s, c, ref := newStub(t, fanout.StubOptions{CreatingPolls: 2, DeletingPolls: 2})
	first, created, err := kstream.EnsureConsumer(t.Context(), c, ref, "tail", fastWait)
	if err != nil || !created || first.Status != types.ConsumerStatusActive {
		t.Fatalf("new: %+v %v %v", first, created, err)
	}
	again, created, err := kstream.EnsureConsumer(t.Context(), c, ref, "tail", fastWait)
	if err != nil || created || again.ARN != first.ARN {
		t.Fatalf("existing: %+v %v %v", again, created, err)
	}
	// One still CREATING is waited for, not registered again.
	if _, _, err := kstream.RegisterConsumer(t.Context(), c, ref, "slow"); err != nil {
		t.Fatal(err)
	}
	slow, created, err := kstream.EnsureConsumer(t.Context(), c, ref, "slow", fastWait)
	if err != nil || created || slow.Status != types.ConsumerStatusActive {
		t.Fatalf("creating: %+v %v %v", slow, created, err)
	}
	// One being deregistered is waited out and registered anew.
	if err := kstream.DeregisterConsumer(t.Context(), c, ref, "tail"); err != nil {
		t.Fatal(err)
	}
	fresh, created, err := kstream.EnsureConsumer(t.Context(), c, ref, "tail", fastWait)
	if err != nil || !created || fresh.Status != types.ConsumerStatusActive {
		t.Fatalf("deleting: %+v %v %v", fresh, created, err)
	}
	if got := s.Consumers(); !slices.Equal(got, []string{"slow", "tail"}) {
		t.Fatalf("consumers %v", got)
	}
	if _, _, err := kstream.EnsureConsumer(t.Context(), c, ref, "no good", fastWait); !errors.Is(err, kstream.ErrBadConsumerName) {
		t.Fatalf("bad name: %v", err)
	}
}

// At 20 consumers the error names them all, in one line.
func TestRegisterAtTheLimit(t *testing.T) {
	s, c, ref := newStub(t, fanout.StubOptions{ListPageSize: 7, CreatingPolls: -1})
	var names []string
	for i := range kstream.MaxConsumers {
		names = append(names, fmt.Sprintf("c%02d", i))
		if _, _, err := kstream.RegisterConsumer(t.Context(), c, ref, names[i]); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := kstream.RegisterConsumer(t.Context(), c, ref, "one-more")
	var le *kstream.ConsumerLimitError
	if !errors.As(err, &le) || !errors.Is(err, kstream.ErrConsumerLimit) {
		t.Fatalf("error %v", err)
	}
	want := "stream efo-stub already has 20 consumers, the most a stream can have (LimitExceededException): " + strings.Join(names, ", ") + "; deregister one to make room"
	if err.Error() != want {
		t.Fatalf("message\n%s\nwant\n%s", err, want)
	}
	if len(s.Consumers()) != kstream.MaxConsumers {
		t.Fatalf("consumers %v", s.Consumers())
	}
}

// A LimitExceeded below 20 consumers is a rate limit (5 calls a second, or
// 5 consumers CREATING): reported as it is, at once.
func TestRegisterRateLimited(t *testing.T) {
	s, c, ref := newStub(t, fanout.StubOptions{CreatingPolls: -1})
	s.FailOp("RegisterStreamConsumer", "LimitExceededException")
	var lee *types.LimitExceededException
	if _, _, err := kstream.RegisterConsumer(t.Context(), c, ref, "y"); !errors.As(err, &lee) || errors.Is(err, kstream.ErrConsumerLimit) {
		t.Fatalf("rate limit: %v", err)
	}
	if got := s.Consumers(); len(got) != 0 {
		t.Fatalf("consumers %v", got)
	}
}

// Listing and describing are read-only: a moment's LimitExceeded is waited
// out.
func TestReadsRideOutLimits(t *testing.T) {
	rule := awscall.Rules[awscall.ControlRead]
	awscall.Rules[awscall.ControlRead].First = time.Millisecond
	t.Cleanup(func() { awscall.Rules[awscall.ControlRead] = rule })
	s, c, ref := newStub(t, fanout.StubOptions{CreatingPolls: -1})
	if _, _, err := kstream.RegisterConsumer(t.Context(), c, ref, "x"); err != nil {
		t.Fatal(err)
	}
	s.FailOp("ListStreamConsumers", "LimitExceededException", "LimitExceededException")
	s.FailOp("DescribeStreamConsumer", "LimitExceededException")
	if list, err := kstream.ListConsumers(t.Context(), c, ref); err != nil || len(list) != 1 {
		t.Fatalf("list %+v %v", list, err)
	}
	if cons, err := kstream.DescribeConsumer(t.Context(), c, ref, "x"); err != nil || cons.Name != "x" {
		t.Fatalf("describe %+v %v", cons, err)
	}
}

func TestRegisterNameTaken(t *testing.T) {
	_, c, ref := newStub(t, fanout.StubOptions{CreatingPolls: -1})
	first, _, err := kstream.RegisterConsumer(t.Context(), c, ref, "x")
	if err != nil {
		t.Fatal(err)
	}
	again, created, err := kstream.RegisterConsumer(t.Context(), c, ref, "x")
	if err != nil || created || again.ARN != first.ARN {
		t.Fatalf("%+v %v %v", again, created, err)
	}
}

func TestWaitConsumerTimesOut(t *testing.T) {
	_, c, ref := newStub(t, fanout.StubOptions{CreatingPolls: 1000})
	if _, _, err := kstream.RegisterConsumer(t.Context(), c, ref, "x"); err != nil {
		t.Fatal(err)
	}
	o := fastWait
	o.Timeout = 50 * time.Millisecond
	_, err := kstream.WaitConsumerActive(t.Context(), c, ref, "x", o)
	var te *kstream.ConsumerTimeoutError
	if !errors.As(err, &te) || te.Status != types.ConsumerStatusCreating || err.Error() != "consumer x of stream efo-stub is still CREATING after 50ms" {
		t.Fatalf("error %v", err)
	}
}

// Against kinesis-mock: the whole life of a consumer, and a second
// EnsureConsumer (a tail started again after being killed) reusing it.
func TestConsumerLifecycleKinesisMock(t *testing.T) {
	e := emulator.Require(t)
	if !e.Caps.Consumers {
		t.Skipf("emulator: %s has no stream consumers", e.Backend)
	}
	c := e.Client(t)
	name := emulator.StreamName(t)
	e.CreateStream(t, c, name, 1)
	ref, err := kstream.ParseRef(e.StreamARN(t, c, name))
	if err != nil {
		t.Fatal(err)
	}
	cname := kstream.DefaultConsumerName("tester", "host.example")
	e.DeregisterAtEnd(t, c, ref.ARN, cname)
	var seen []types.ConsumerStatus
	o := kstream.ConsumerWaitOptions{MinDelay: 20 * time.Millisecond, MaxDelay: 100 * time.Millisecond,
		OnPoll: func(st types.ConsumerStatus, _ time.Duration) { seen = append(seen, st) }}
	first, created, err := kstream.EnsureConsumer(t.Context(), c, ref, cname, o)
	if err != nil || !created || first.Status != types.ConsumerStatusActive {
		t.Fatalf("%+v %v %v", first, created, err)
	}
	if len(seen) < 2 || seen[0] != types.ConsumerStatusCreating || seen[len(seen)-1] != types.ConsumerStatusActive {
		t.Fatalf("progress %v", seen)
	}
	again, created, err := kstream.EnsureConsumer(t.Context(), c, ref, cname, o)
	if err != nil || created || again.ARN != first.ARN {
		t.Fatalf("reuse: %+v %v %v", again, created, err)
	}
	list, err := kstream.ListConsumers(t.Context(), c, ref)
	if err != nil || len(list) != 1 || list[0].Name != cname || list[0].ARN != first.ARN || list[0].Created.IsZero() {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := kstream.DeregisterConsumer(t.Context(), c, ref, cname); err != nil {
		t.Fatal(err)
	}
	if err := kstream.WaitConsumerGone(t.Context(), c, ref, cname, o); err != nil {
		t.Fatal(err)
	}
	if list, err := kstream.ListConsumers(t.Context(), c, ref); err != nil || len(list) != 0 {
		t.Fatalf("after deregister: %+v %v", list, err)
	}
}
