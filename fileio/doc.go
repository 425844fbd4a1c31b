// Package fileio reads the documents collbench is given and writes the
// files it is asked for, so that nothing a user points it at is lost,
// half-written or clobbered.
//
// Regular files are replaced atomically: written beside the target, synced,
// then renamed over it, so a reader sees the old file or the whole new one.
// Symbolic links are followed and the file they lead to is replaced, so the
// link stays valid. Devices, FIFOs, sockets and the /dev/stdout family are
// written through, never replaced: /dev/null stays a device and a FIFO
// reaches its reader. Inputs are read with a size cap and give up when the
// caller's context ends, so /dev/zero or a FIFO without a writer cannot
// hold a command forever. Save adds the command line's "-" for standard
// output, and a CheckedWriter keeps the first error of a stream written
// with fmt, so a full disk under stdout is not silently ignored.
package fileio
