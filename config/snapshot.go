package config

// Snapshot is the "snapshot" section. Its owner adds fields here, each with a
// mapstructure/yaml tag, a comment and a default in defaultSnapshot.
type Snapshot struct {
}

func defaultSnapshot() Snapshot {
	return Snapshot{}
}

func (c *Snapshot) validate() error { return nil }
