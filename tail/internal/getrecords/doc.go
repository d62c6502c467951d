// Package getrecords decodes successful GetRecords responses faster than
// the SDK's generic deserializer, and hands everything else to the SDK.
//
// Imports: internal/swar, the Kinesis SDK, smithy-go and the standard
// library.
package getrecords
