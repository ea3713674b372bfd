package main

import "sexton/internal/progress"

// progressTo is where long operator work reports its progress: stderr,
// never stdout, so --json output stays one JSON value (tests replace it).
var progressTo = progress.Stderr()
