package cmd

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
)

// Only a write to stdout that the reader closed is a quiet exit: an EPIPE
// on a connection to AWS is an error like any other (it used to look the
// same and end tail with exit 0, saying nothing).
func TestBrokenPipeIsStdoutOnly(t *testing.T) {
	network := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	if isBrokenPipe(fmt.Errorf("operation error Kinesis: ListShards, https response error: %w", network)) {
		t.Error("an EPIPE on a connection to AWS counts as a closed stdout")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	_, werr := stdoutWriter{w}.Write([]byte("x\n"))
	w.Close()
	if werr == nil {
		t.Skip("a write to a closed pipe did not fail here")
	}
	if !isBrokenPipe(fmt.Errorf("shard s: %w", werr)) {
		t.Errorf("a write to a closed stdout (%v) is not taken for one", werr)
	}
}
