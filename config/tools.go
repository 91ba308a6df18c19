package config

// Tools is the "tools" section. Its owner adds fields here, each with a
// mapstructure/yaml tag, a comment and a default in defaultTools.
type Tools struct {
}

func defaultTools() Tools {
	return Tools{}
}

func (c *Tools) validate() error { return nil }
