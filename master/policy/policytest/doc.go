// Package policytest runs the testdata of the master's policy packages on
// github.com/cockroachdb/datadriven: each package's test gives a verb
// table (one handler per verb) for a fresh state per file, and the shared
// verb "advance" moves the fake clock every file starts at Start. Times in
// commands and outputs are offsets from Start ("+1.5s"). Run a test with
// -rewrite to write the outputs the code gives into its files (review the
// diff before keeping them). Only tests import it.
package policytest
