// Package cliflag reads what the command line's flags are given: their
// defaults from the environment (EnvString and the like; Bind sets a flag
// from the variable its usage names, so the command line still wins),
// sizes with units, comma-separated lists, and flags interspersed with
// the positional arguments.
package cliflag
