package config

// Engine is the "engine" section. Its owner adds fields here, each with a
// mapstructure/yaml tag, a comment and a default in defaultEngine.
type Engine struct {
}

func defaultEngine() Engine {
	return Engine{}
}

func (c *Engine) validate() error { return nil }
