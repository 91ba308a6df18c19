package config

// Sandbox is the "sandbox" section. Its owner adds fields here, each with a
// mapstructure/yaml tag, a comment and a default in defaultSandbox.
type Sandbox struct {
}

func defaultSandbox() Sandbox {
	return Sandbox{}
}

func (c *Sandbox) validate() error { return nil }
