package config

import "fmt"

// Classifier is the "classifier" section: extensions of the shell-command
// classifier's rule tables and its caps.
type Classifier struct {
	// ReadOnly lists extra argv prefixes ("kubectl get", "terraform plan")
	// that are read_only with any further arguments. Forbidden detectors
	// still apply.
	ReadOnly []string `mapstructure:"read_only" yaml:"read_only"`
	// Dangerous lists programs that are always at least dangerous, even
	// where a built-in rule would call them read_only.
	Dangerous []string `mapstructure:"dangerous" yaml:"dangerous"`
	// Forbidden lists programs that must never run.
	Forbidden []string `mapstructure:"forbidden" yaml:"forbidden"`
	// TrustGitReads makes git read subcommands (status, log, diff, ...)
	// read_only. Set it to false for untrusted repositories, whose config
	// can make those commands run programs.
	TrustGitReads bool `mapstructure:"trust_git_reads" yaml:"trust_git_reads"`
	// MaxBytes caps the size of a command; longer ones are dangerous.
	MaxBytes int `mapstructure:"max_bytes" yaml:"max_bytes"`
	// MaxDepth caps nesting (substitutions, bash -c bodies, compound
	// commands); deeper parts make the command dangerous.
	MaxDepth int `mapstructure:"max_depth" yaml:"max_depth"`
	// MaxCommands caps the number of simple commands analysed; more make
	// the command dangerous.
	MaxCommands int `mapstructure:"max_commands" yaml:"max_commands"`
}

func defaultClassifier() Classifier {
	return Classifier{
		ReadOnly:      []string{},
		Dangerous:     []string{},
		Forbidden:     []string{},
		TrustGitReads: true,
		MaxBytes:      256 << 10,
		MaxDepth:      16,
		MaxCommands:   1000,
	}
}

func (c *Classifier) validate() error {
	if c.MaxBytes <= 0 || c.MaxDepth <= 0 || c.MaxCommands <= 0 {
		return fmt.Errorf("classifier: max_bytes, max_depth and max_commands must be positive: %w", ErrInvalid)
	}
	return nil
}
