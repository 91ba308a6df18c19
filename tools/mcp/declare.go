package mcp

import (
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/tools"
)

// Declaration is the MCP declaration of t exactly as `agentbox tools
// --format mcp` prints it (tools.Declare): its name, the rendered
// description, the input schema generated from its params struct, and the
// annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint) the tool answers for its zero params.
func Declaration(t tools.Tool) (*sdk.Tool, error) {
	d, err := tools.Declare(t, tools.FormatMCP)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name(), err)
	}
	var decl sdk.Tool
	if err := json.Unmarshal(raw, &decl); err != nil {
		return nil, fmt.Errorf("tool %s: declaration: %w", t.Name(), err)
	}
	if m, ok := decl.InputSchema.(map[string]any); !ok || m["type"] != "object" {
		return nil, fmt.Errorf("tool %s: input schema is not an object", t.Name())
	}
	decl.Title = t.Name()
	if decl.Annotations == nil {
		decl.Annotations = &sdk.ToolAnnotations{}
	}
	if decl.Annotations.OpenWorldHint == nil {
		closed := false
		decl.Annotations.OpenWorldHint = &closed
	}
	return &decl, nil
}
