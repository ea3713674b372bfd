package main

import (
	"flag"
	"strings"

	"sexton/internal/cliflag"
)

// Every flag has an environment variable, named in its usage as
// "(env NAME)": either given there where the flag is defined, which then
// reads it for the default itself (cliflag.EnvString and
// cliflag.EnvUsage; the servers' and the cluster flags' names,
// SEXTON_MASTERS, the holder's MOONCAKE_* with their own parsing), or
// derived here from the verb and the flag,
// SEXTON_<VERB>_<FLAG> (rm --batch: SEXTON_RM_BATCH), appended to the
// usage and read by parseAll before it parses the command line, so the
// flag wins; a derived variable's value the flag does not accept is a
// usage error. noEnv are the exceptions.

// noEnv are the flags ("VERB --FLAG") without an environment variable,
// and why.
var noEnv = map[string]string{
	"rm --" + confirmAllFlag: "deleting every key is asked for on the command line, never inherited from an environment",
	"rm --all":               "an inherited variable must not widen what rm removes",
	"rm --prefix":            "an inherited variable must not turn rm KEY into a bulk delete",
}

// flagEnv is the environment variable of flag f of the FlagSet of verb
// path; "" for the exceptions.
func flagEnv(path string, f *flag.Flag) string {
	if m := cliflag.EnvInUsage.FindStringSubmatch(f.Usage); m != nil {
		return m[1]
	}
	if _, ok := noEnv[path+" --"+f.Name]; ok {
		return ""
	}
	name := "SEXTON_" + strings.Join(strings.Fields(path), "_") + "_" + f.Name
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(name))
}

// bindEnv names the derived variable in the usage of every flag that
// names none and, with apply, sets the flag from it when it is set and
// not empty.
func bindEnv(fs *flag.FlagSet, apply bool) error {
	return cliflag.Bind(fs, func(f *flag.Flag) string { return flagEnv(fs.Name(), f) }, apply)
}

// parseAll parses flags that may come before, between or after the
// positional arguments, and returns the positional ones. "--" ends flags.
// The flags' environment variables are read first (bindEnv).
func parseAll(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := bindEnv(fs, true); err != nil {
		return nil, usagef("%v", err)
	}
	pos, err := cliflag.Interspersed(fs, args)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return pos, nil
}

// parseFlags is fs.Parse with interspersed flags: afterwards fs.Args()
// holds only the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	pos, err := parseAll(fs, args)
	if err != nil {
		return err
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// roleTokenFlag defines --ROLE-token, the tokens that prove role on a
// server's port (portName: "RPC port", "data port"), read from
// SEXTON_ROLE_TOKEN by default.
func roleTokenFlag(fs *flag.FlagSet, p *string, role, portName string) {
	env := "SEXTON_" + strings.ToUpper(role) + "_TOKEN"
	fs.StringVar(p, role+"-token", cliflag.EnvString(env, ""), "token that proves the "+role+" role on the "+portName+
		", at least 32 bytes; a comma-separated list accepts each, to roll one without downtime (env "+env+")")
}
