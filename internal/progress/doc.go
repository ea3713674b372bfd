// Package progress reports long operator work (a snapshot's transfer, a
// check over many holders, a rebuild) on a writer that is not stdout, so
// a command's --json output stays one JSON value. On a terminal it is a
// progress bar (schollz/progressbar: redraw throttling, byte units, rates
// and spinners for an unknown total are its job); otherwise, for logs and
// scripts, a plain line every Sink.PlainEvery, so an operation shorter
// than that prints nothing.
package progress
