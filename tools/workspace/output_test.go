package workspace

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/config"
	"github.com/agentbox/agentbox/sandbox"
)

// TestBashCutOutputOneNote runs a command whose output is larger than the
// sandbox keeps, through the whole pipeline over the shared fake runner:
// the model sees exactly one note of what was left out, whether the
// sandbox's cut is the only one or the pipeline's output cap cuts again
// around it.
func TestBashCutOutputOneNote(t *testing.T) {
	const n = sandbox.DefaultOutputCap + 500_000
	tests := []struct {
		name           string
		maxOutputBytes int
	}{
		{"sandbox cut only", 4 * sandbox.DefaultOutputCap},
		{"pipeline cap cuts too", 30000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, run := openJobSystem(t, func(c *config.Config) { c.Tools.MaxOutputBytes = tt.maxOutputBytes })
			in, _ := json.Marshal(map[string]string{"command": "head -c " + strconv.Itoa(n) + " /dev/zero | tr '\\0' x; echo; echo last"})
			r := run("Bash", string(in))
			if got := strings.Count(r.Content, "omitted"); got != 1 || !strings.HasSuffix(r.Content, "\nlast") {
				t.Errorf("%d notes of the cut, want 1; content ends %q", got, r.Content[max(0, len(r.Content)-300):])
			}
			// The one note counts every byte the model does not see.
			m := regexp.MustCompile(`\[\.\.\. (\d+) bytes omitted`).FindStringSubmatch(r.Content)
			if m == nil {
				t.Fatalf("no count in the note: %q", r.Content[max(0, len(r.Content)-300):])
			}
			shown := len(r.Content) - len(m[0])
			if noted, _ := strconv.Atoi(m[1]); noted+shown < n+len("\nlast\n")-1 || noted > n+len("\nlast\n") {
				t.Errorf("the note says %d bytes omitted, but %d of %d bytes are missing from what the model sees", noted, n+len("\nlast\n")-shown, n+len("\nlast\n"))
			}
		})
	}
}
