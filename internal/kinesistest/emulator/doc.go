// Package emulator starts and stops a local Kinesis emulator for tests and
// benchmarks, and gives them clients, stream names and a few helpers.
//
// It owns how the emulators are run (docs/KINESIS-NOTES.md §10): free
// loopback ports, exec with the log in a file,
// SIGKILL on parent death (Linux), readiness by ListStreams every 100 ms for at
// most 30 s, SIGTERM then SIGKILL on Stop, and a per-backend capability table
// (Caps) so tests skip what a backend cannot do.
//
// Use it for integration tests of the commands and of the binary, against
// a real emulator process; put faults in front of it for what no emulator
// does. Logic that needs no HTTP is tested faster on the in-process fake.
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
//   - KINESIS_SHARDS_TEST_BACKEND: kinesis-mock (default), kinesalite or moto.
//   - KINESIS_SHARDS_TEST_ENDPOINT: use this running emulator, start nothing.
//   - CI: when set (and not "false" or "0"), a missing node, node_modules or
//     moto_server fails the package instead of skipping its emulator tests.
//
// Namespaces: kinesis-mock takes a 12-digit access key id as the account id.
// Clients from Client and the environment from Env use a key derived from the
// test package's directory (AccountID), so every package has its own account
// on a shared kinesis-mock. kinesalite and moto ignore the key: there, only
// StreamName keeps tests apart.
//
// The emulators' npm packages live in testdata/emulator/node_modules (make
// test installs them with npm ci); moto_server is used only when on PATH.
package emulator
