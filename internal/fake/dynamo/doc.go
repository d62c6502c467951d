// Package dynamo is a DynamoDB of the tool's own, in memory, for the
// lease-table tests: tables with a hash key and an optional range key
// (ACTIVE at once, gone at once), CreateTable, DescribeTable, ListTables,
// DeleteTable, PutItem, GetItem, UpdateItem, DeleteItem and Scan (Limit and
// ExclusiveStartKey paging), with the condition and update expressions the
// lease worker writes (expr.go lists the part of the language served).
// It follows the service where it matters to a client: its error codes
// and messages, reserved words, placeholders that must all be used,
// updates computed from the item before the call, ReturnValues, and key
// checks. Anything it does not serve (a FilterExpression, an index,
// nested paths) is refused with a ValidationException that says so, never
// ignored.
//
// It is reached two ways:
//   - in process, through the SDK's own method signatures, so it stands in
//     for a client (internal/leases/leasestest's MemTable; tests add
//     latency with Latency and faults with Hook);
//   - over the wire, in the DynamoDB JSON protocol (Handler), by any SDK
//     client: through Transport in process, or on a port, as the test
//     harness's StartDynalite serves it by default.
//
// Imports: the SDK (its DynamoDB types and schemas, smithy's AWS JSON
// protocol) and the standard library.
package dynamo
