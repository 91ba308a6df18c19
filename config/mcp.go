package config

// MCP is the "mcp" section. Its owner adds fields here, each with a
// mapstructure/yaml tag, a comment and a default in defaultMCP.
type MCP struct {
}

func defaultMCP() MCP {
	return MCP{}
}

func (c *MCP) validate() error { return nil }
