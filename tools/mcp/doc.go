// Package mcp is the MCP front end of the tool system: it declares the
// registry's tools to MCP clients (stdio, or streamable HTTP, which the
// caller serves only behind a config/frontdoor door) and hands each
// tools/call to a CallFunc, which runs it through the tool pipeline. Each MCP session has its own tools.Session
// (cwd, read tracker, grants, background jobs) and its own Approver
// (elicitation on that client — a form of one field, one choice, "allow
// once" first, then "always allow" per part of the command not allowed
// yet, then deny; no field when nothing can be always allowed, Accept
// allowing once — the approval terminal, or the non-interactive
// decision); the Approver travels with the call
// (Call.Approver, then tools.Request.Approver), which is the only route
// by which a call reaches a person. The optional History and Undo tools
// read and revert the journal through Journal (workspace.Snapshots, the
// store the pipeline journals in). It imports no domain package. A
// *Server is safe for concurrent use.
package mcp
