// Package jsonout holds the shapes `sexton` prints under --json
// (docs/CLI.md) and the check every one of them passes before it is
// printed: snake_case keys everywhere, lists as [] never null,
// incarnations as "HIGH:LOW" (what stat prints and rm --if-incarnation
// takes), times as unix nanoseconds. api and holder types without json
// tags get an output struct here rather than tags in api. Encode runs
// Check on every output, so a field added without a tag, or a nil list,
// fails the verb's test instead of reaching a script; the CLI's doc tests
// read the types here to keep docs/CLI.md's examples true.
package jsonout
