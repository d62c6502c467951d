// Package emulator gives each test package a Kinesis on a loopback port
// for tests and benchmarks, with clients, stream names and a few helpers.
//
// By default the Kinesis is the tool's own fake (internal/fake) served by
// the test binary itself: nothing to install, nothing to start, and the
// SDK's whole HTTP path and the real binary reach it as they reach AWS.
// The node emulators (kinesis-mock, kinesalite) and moto are one variable
// away, for the parity suite and for runs that check the tool against an
// implementation that is not ours. For them the package owns how they are
// run (docs/KINESIS-NOTES.md §10): free loopback ports, exec with the log
// in a file, SIGKILL on parent death (Linux), readiness by ListStreams
// every 100 ms for at most 30 s, SIGTERM then SIGKILL on Stop. A
// per-backend capability table (Caps) lets tests skip what a backend
// cannot do. StartDynalite does the same for DynamoDB: the fake
// (internal/fake/dynamo) by default, dynalite when asked.
//
// Put faults in front of it (internal/kinesistest/faults) for what no
// backend does on its own. Logic that needs no HTTP is tested faster on
// the fake in process.
//
// Every package that talks to an emulator has a TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(emulator.Main(m, emulator.Options{})) }
//
// and each such test starts with
//
//	e := emulator.Require(t) // skips (locally) or fails (CI) when no emulator
//	c := e.Client(t)
//	name := emulator.StreamName(t)
//	e.CreateStream(t, c, name, 2)
//
// Environment:
//
//   - KINESIS_SHARDS_TEST_BACKEND: fake (default), kinesis-mock, kinesalite or moto.
//   - KINESIS_SHARDS_TEST_DYNAMO: dynalite for the node DynamoDB; unset for the fake.
//   - KINESIS_SHARDS_TEST_ENDPOINT: use this running emulator, start nothing.
//   - CI: when set (and not "false" or "0"), a missing node, node_modules or
//     moto_server (for a backend that needs them) fails the package instead
//     of skipping its emulator tests.
//
// Namespaces: kinesis-mock takes a 12-digit access key id as the account id.
// Clients from Client and the environment from Env use a key derived from the
// test package's directory (AccountID), so every package has its own account
// on a shared kinesis-mock. The fake, kinesalite and moto ignore the key:
// there, only StreamName keeps tests apart (each test binary has a fake of
// its own anyway).
//
// The emulators' npm packages live in testdata/emulator/node_modules (make
// test installs them with npm ci); moto_server is used only when on PATH.
package emulator
