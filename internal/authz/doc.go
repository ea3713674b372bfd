// Package authz decides which role may call which RPC method on the
// master's RPC listener and a holder's data listener: it learns a
// caller's role from its certificate's sexton://<role>/<name> name or
// from the token it proved, checks it against the listener's role table,
// refuses with PERMISSION_DENIED, and audits operator calls and every
// refusal (docs/SECURITY.md, "Roles").
package authz
