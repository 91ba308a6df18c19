package config

import (
	"fmt"
	"strings"
	"time"
)

// Engine is the "engine" section: which Docker Engine API endpoint to use
// and how agentbox's private engine is started when none answers.
type Engine struct {
	// Host is a Docker Engine API address (unix:///path or tcp://host:port)
	// tried after $DOCKER_HOST and before the default sockets. Empty: none.
	Host string `mapstructure:"host" yaml:"host"`
	// StartTimeout bounds how long `agentbox engine start` waits for the
	// private engine to answer.
	StartTimeout time.Duration `mapstructure:"start_timeout" yaml:"start_timeout"`
	// AutoInstall lets `agentbox engine start`, running as root, install
	// Debian's docker.io when dockerd is missing.
	AutoInstall bool `mapstructure:"auto_install" yaml:"auto_install"`
	// AutoStart lets `agentbox mcp`, `tool` and `exec` start the private
	// engine (as `agentbox engine start` does) when no engine answers.
	AutoStart bool `mapstructure:"auto_start" yaml:"auto_start"`
}

func defaultEngine() Engine {
	return Engine{StartTimeout: 60 * time.Second, AutoInstall: true, AutoStart: true}
}

func (c *Engine) validate() error {
	if c.Host != "" && !strings.Contains(c.Host, "://") {
		return fmt.Errorf("engine.host %q: want an address like unix:///run/docker.sock or tcp://127.0.0.1:2375", c.Host)
	}
	if c.StartTimeout <= 0 || c.StartTimeout > 10*time.Minute {
		return fmt.Errorf("engine.start_timeout %s: want more than 0 and at most 10m", c.StartTimeout)
	}
	return nil
}
