// Package completion writes sexton's shell completion scripts for bash
// and zsh from a table of its commands and their flags (cmd/sexton makes
// the table from its verb table), so a command or flag added there
// completes without more work.
package completion
