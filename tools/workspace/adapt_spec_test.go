package workspace

import (
	"testing"

	"github.com/agentbox/agentbox/tools"
)

// The network proxy attributes connections to the call and session the
// sandbox is told about.
func TestToSpecCarriesCaller(t *testing.T) {
	s := toSpec(tools.ExecRequest{Command: "true", Call: "c1", Session: "s1"})
	if s.Call != "c1" || s.Session != "s1" {
		t.Fatalf("spec caller = %q %q", s.Call, s.Session)
	}
}
