package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceUpToDate fails when docs/configuration.md is not what
// agentbox-configref would write from the config structs today: a key, a
// default or a doc comment changed without the reference being regenerated.
func TestReferenceUpToDate(t *testing.T) {
	root := filepath.Join("..", "..")
	path := filepath.Join(root, defaultDoc)
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(filepath.Join(root, "config"), doc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, want) {
		t.Fatalf("%s is stale: run `go run ./cmd/agentbox-configref` from the repository root and commit the result", defaultDoc)
	}
}

// TestGenerateReplacesOnlyBetweenMarkers checks that the text around the
// markers is kept, the old reference is replaced, and a file without
// markers is an error.
func TestGenerateReplacesOnlyBetweenMarkers(t *testing.T) {
	dir := filepath.Join("..", "..", "config")
	doc := []byte("# before\n" + startMark + "\nold text\n" + endMark + "\nafter\n")
	out, err := generate(dir, doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"# before\n" + startMark + "\n", "| `sandbox.pool_size` | integer |", endMark + "\nafter\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(s, "old text") {
		t.Error("the old reference was kept")
	}
	if _, err := generate(dir, []byte("no markers here\n")); err == nil {
		t.Error("a file without markers was accepted")
	}
}
