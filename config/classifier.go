package config

// Classifier is the "classifier" section. Its owner adds fields here, each with a
// mapstructure/yaml tag, a comment and a default in defaultClassifier.
type Classifier struct {
}

func defaultClassifier() Classifier {
	return Classifier{}
}

func (c *Classifier) validate() error { return nil }
