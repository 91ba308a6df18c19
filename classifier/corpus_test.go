package classifier

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"slices"
	"testing"
)

const (
	sharedCorpus = "../../shared/corpus/commands.jsonl"
	localCorpus  = "testdata/corpus/commands.jsonl"
	// longtailCorpus is our own: builtins that run their arguments,
	// options that write or load code, globs in option position, git
	// argument counts and git aimed at another repository. Same format.
	longtailCorpus = "testdata/corpus-longtail.jsonl"
	// secretsCorpus is our own too, and strict (every line must pass and
	// name its rule): secret files read by literal path, glob or
	// substitution; downloaded command names, tokens in URLs, credential
	// printers piped to the network, rsync --delete aimed at ~ or /; fd.
	secretsCorpus = "testdata/corpus-secrets.jsonl"
)

type corpusLine struct {
	Cmd    string  `json:"cmd"`
	Want   Class   `json:"want"`
	Accept []Class `json:"accept"`
	Why    string  `json:"why"`
	Group  string  `json:"group"`
	// Rule, when set, must be among the verdict's reasons (strict
	// corpora only).
	Rule string `json:"rule,omitempty"`
}

// corpusPath prefers the shared corpus and falls back to the committed
// byte-identical copy (CI runs on a clean clone without ../shared).
func corpusPath(t testing.TB) string {
	if _, err := os.Stat(sharedCorpus); err == nil {
		return sharedCorpus
	}
	return localCorpus
}

func readCorpus(t testing.TB) []corpusLine { return readCorpusFile(t, corpusPath(t)) }

func readCorpusFile(t testing.TB, name string) []corpusLine {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l corpusLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("corpus line %d: %v", n, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCorpus scores the classifier on every corpus as the corpus README
// says.
func TestCorpus(t *testing.T) {
	for _, name := range []string{corpusPath(t), longtailCorpus} {
		t.Run(path.Base(name), func(t *testing.T) { scoreCorpus(t, name) })
	}
}

// TestCorpusStrict runs the strict corpora: every line must get its class
// (or an accepted one) and, when the line names a rule, a reason with it.
func TestCorpusStrict(t *testing.T) {
	for _, l := range readCorpusFile(t, secretsCorpus) {
		v := Classify(l.Cmd)
		if v.Class != l.Want && !slices.Contains(l.Accept, v.Class) {
			t.Errorf("%q: got %s, want %s (%s); reasons %+v", l.Cmd, v.Class, l.Want, l.Why, v.Reasons)
			continue
		}
		if l.Rule != "" && !slices.ContainsFunc(v.Reasons, func(r Reason) bool { return r.Rule == l.Rule }) {
			t.Errorf("%q: %s without a reason of rule %s; reasons %+v", l.Cmd, v.Class, l.Rule, v.Reasons)
		}
	}
}

func scoreCorpus(t *testing.T, name string) {
	lines := readCorpusFile(t, name)
	var unsafe, missedForbidden, overBlocked, readOnlyLines, forbiddenLines, failed int
	for n, l := range lines {
		v := Classify(l.Cmd)
		pass := v.Class == l.Want || slices.Contains(l.Accept, v.Class)
		switch l.Want {
		case ReadOnly:
			readOnlyLines++
			if v.Class == Dangerous && !slices.Contains(l.Accept, Dangerous) {
				overBlocked++
			}
		case Forbidden:
			forbiddenLines++
			if v.Class == Dangerous {
				missedForbidden++
			}
		}
		if l.Want != ReadOnly && v.Class == ReadOnly {
			unsafe++
		}
		if !pass {
			failed++
			t.Logf("line %d: %q: got %s, want %s %v (%s); reasons %v", n+1, l.Cmd, v.Class, l.Want, l.Accept, l.Why, v.Reasons)
		}
	}
	recall := 100 * float64(forbiddenLines-missedForbidden) / float64(forbiddenLines)
	overPct := 100 * float64(overBlocked) / float64(readOnlyLines)
	// Printed (not logged) so that plain `go test` shows the figures.
	fmt.Printf("classifier corpus %s: %d lines, %d failed; unsafe %d; missed forbidden %d of %d (recall %.1f%%); over-blocked %d of %d read_only lines (%.1f%%)\n",
		name, len(lines), failed, unsafe, missedForbidden, forbiddenLines, recall, overBlocked, readOnlyLines, overPct)
	if unsafe != 0 {
		t.Errorf("unsafe = %d, want 0", unsafe)
	}
	if recall < 95 {
		t.Errorf("forbidden recall = %.1f%%, want >= 95%%", recall)
	}
	if overPct > 10 {
		t.Errorf("over-blocked = %.1f%% of read_only lines, want <= 10%%", overPct)
	}
}

// TestCorpusCopyIdentical checks that the committed copy of the corpus is
// byte-identical to the shared one whenever both exist.
func TestCorpusCopyIdentical(t *testing.T) {
	for _, name := range []string{"commands.jsonl", "README.md"} {
		shared, err := os.ReadFile("../../shared/corpus/" + name)
		if err != nil {
			t.Logf("shared corpus absent (%v); nothing to compare", err)
			continue
		}
		local, err := os.ReadFile("testdata/corpus/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(shared, local) {
			t.Errorf("testdata/corpus/%s differs from ../shared/corpus/%s; copy it again, never edit it", name, name)
		}
	}
}

// TestCorpusStrictConcurrent classifies the strict corpus from several
// goroutines at once: the compiled secret rules are shared (run with
// -race).
func TestCorpusStrictConcurrent(t *testing.T) {
	lines := readCorpusFile(t, secretsCorpus)
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- true }()
			for _, l := range lines {
				if v := Classify(l.Cmd); v.Class != l.Want && !slices.Contains(l.Accept, v.Class) {
					t.Errorf("concurrent %q: %s", l.Cmd, v.Class)
				}
			}
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}
