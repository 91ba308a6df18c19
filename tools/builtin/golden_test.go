package builtin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/tools"
)

// TestDeclarationsGolden pins what the model is told about each tool: its
// rendered description and its generated input schema.
func TestDeclarationsGolden(t *testing.T) {
	for _, tool := range All() {
		t.Run(tool.Name(), func(t *testing.T) {
			schema, err := json.MarshalIndent(tool.Schema(), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := "# " + tool.Name() + " (" + string(tool.Kind()) + ")\n\n" + tool.Description().Render() + "\n\n## input schema\n" + string(schema) + "\n"
			golden(t, "decl_"+tool.Name(), got)
		})
	}
}

// TestOutputsGolden pins the model-facing text of typical results.
func TestOutputsGolden(t *testing.T) {
	env := searchTree(t)
	ws := env.Workspace
	writeFiles(t, ws, map[string]string{"code.py": "def f(x):\n    if x:\n        return 1\n    return 0\n"})
	old := time.Now().Add(-2 * time.Hour)
	must(t, os.Chtimes(filepath.Join(ws, "code.py"), old, old))
	steps := []struct {
		name string
		tool tools.Tool
		in   string
	}{
		{"read", Read, `{"file_path":"WS/code.py"}`},
		{"read_window", Read, `{"file_path":"WS/ctx.txt","offset":3,"limit":3}`},
		{"read_again", Read, `{"file_path":"WS/code.py"}`},
		{"read_directory", Read, `{"file_path":"WS/util"}`},
		{"edit", Edit, `{"file_path":"WS/code.py","old_string":"        return 1","new_string":"        return 2"}`},
		{"edit_fuzzy", Edit, `{"file_path":"WS/code.py","old_string":"if x:\n  return 2","new_string":"if x:\n  return 3"}`},
		{"edit_ambiguous", Edit, `{"file_path":"WS/code.py","old_string":"return","new_string":"yield"}`},
		{"edit_not_found", Edit, `{"file_path":"WS/code.py","old_string":"def g(x):","new_string":"def h(x):"}`},
		{"multiedit", MultiEdit, `{"file_path":"WS/code.py","edits":[{"old_string":"def f","new_string":"def g"},{"old_string":"return 0","new_string":"return -1"}]}`},
		{"write_new", Write, `{"file_path":"WS/notes/todo.md","content":"# TODO\n- ship\n"}`},
		{"write_existing", Write, `{"file_path":"WS/notes/todo.md","content":"# TODO\n- ship\n- test\n"}`},
		{"grep_content", Grep, `{"pattern":"hello","output_mode":"content","-i":true,"path":"WS/util"}`},
		{"grep_count", Grep, `{"pattern":"package","output_mode":"count","type":"go","path":"WS"}`},
		{"glob", Glob, `{"pattern":"**/*.go","path":"WS"}`},
		{"ls", LS, `{"path":"WS/util"}`},
		{"bash", Bash, `{"command":"printf 'a\\nb\\n' | grep -c z","description":"Count z lines"}`},
	}
	var b strings.Builder
	for _, s := range steps {
		r := run(t, s.tool, env, strings.ReplaceAll(s.in, "WS", ws))
		b.WriteString("=== " + s.name + " " + s.tool.Name() + "\n")
		if r.Err != nil {
			b.WriteString("error: " + string(r.Err.Kind) + "\n")
		}
		b.WriteString(strings.ReplaceAll(r.Content, ws, "/WS") + "\n")
		b.WriteString("--- display: " + strings.ReplaceAll(r.Display, ws, "/WS") + "\n\n")
	}
	golden(t, "outputs", b.String())
}
