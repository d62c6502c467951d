// Package faults injects the failures no Kinesis emulator produces
// (throttling, expired iterators, 5xx, dropped and stalled connections,
// partially failed PutRecords) into the HTTP traffic of tests, benchmarks
// and soak runs.
//
// An Injector holds Rules and decides, per call, whether a fault fires. As
// an http.RoundTripper around a real transport, it serves an SDK client in
// the same process:
//
//	in := faults.New(1, faults.Rule{Op: "GetRecords", Kind: faults.Throttle, Nth: []int{2}})
//	c := e.Client(t, func(o *kinesis.Options) {
//		o.HTTPClient = &http.Client{Transport: in.RoundTripper(e.Transport())}
//	})
//
// As a loopback reverse proxy in front of an emulator, it serves the real
// binary (AWS_ENDPOINT_URL_KINESIS or --endpoint-url set to p.URL):
//
//	p := in.Proxy(t, e.Endpoint)
//
// Both see the same thing: the operation from the X-Amz-Target header
// (Kinesis_20131202.<Op>, or any <Service>.<Op>), the request body
// (buffered, inspected and restored) and, where needed, the response body.
// Error faults answer like the service (HTTP 400 and
// {"__type":"<Code>","message":"..."} with Content-Type
// application/x-amz-json-1.1), so the SDK returns its typed errors
// (*types.ProvisionedThroughputExceededException and so on).
//
// Decisions replay exactly: whether rule i fires on its n-th matching call,
// and which entries a PartialPut fails, depend only on the seed, i and n,
// never on timing or on the interleaving of concurrent calls.
//
// Besides faults, the Injector records what it saw: calls per operation
// (Counts), faults per operation and kind (Fired) and, per shard, the time of
// every GetRecords attempt (GetRecordsCalls), found by following iterators
// from GetShardIterator through each NextShardIterator. MaxCallsInWindow
// checks pacing against those times ("at most 5 GetRecords per second per
// shard").
//
// Rewriting a body (PartialPut) invalidates the SigV4 signature: use this
// package only against emulators, which do not check signatures.
package faults
