package classifier

import (
	"strings"
	"testing"
)

// TestParts checks which commands resolve into simple commands, and the
// class and offered grant prefix of each part. want is one entry per
// part, "class argv... [| prefix...]"; nil: not resolved.
func TestParts(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string
	}{
		{"go test ./...", []string{"dangerous go test ./... | go test"}},
		{"go test ./... 2>&1 | tail -5", []string{"dangerous go test ./... | go test", "read_only tail -5 | tail"}},
		{"cd /ws && go test ./...", []string{"read_only cd /ws | cd", "dangerous go test ./... | go test"}},
		{"go test ./... && echo done", []string{"dangerous go test ./... | go test", "read_only echo done | echo"}},
		{"(go test ./x)", []string{"dangerous go test ./x | go test"}},
		{"{ go vet ./...; go test; }", []string{"dangerous go vet ./... | go vet", "dangerous go test | go test"}},
		{"go test ./... ; rm -rf x", []string{"dangerous go test ./... | go test", "dangerous rm -rf x | rm"}},
		{"make || echo failed >&2", []string{"dangerous make | make", "read_only echo failed | echo"}},
		{"go test ./... > out.txt", []string{"dangerous go test ./... | go test"}},
		{"echo hi > f", []string{"dangerous echo hi | echo"}}, // the redirection is the part's
		{"ls > /dev/null", []string{"read_only ls | ls"}},
		{"FOO=1 go test", []string{"dangerous go test | go test"}},
		{"LC_ALL=C sort x", []string{"read_only sort x | sort"}},
		{"npm run test -- --watch=false | tee log", []string{"dangerous npm run test -- --watch=false | npm run test", "dangerous tee log | tee"}},
		{"timeout 60 go test", []string{"dangerous timeout 60 go test"}}, // a wrapper: no prefix offered
		{"go test & wait", []string{"dangerous go test | go test", "read_only wait | wait"}},
		{"! go test", []string{"dangerous go test | go test"}},
		{"rm -rf /", []string{"forbidden rm -rf /"}},
		{"go test && rm -rf /", []string{"dangerous go test | go test", "forbidden rm -rf /"}},
		// Not resolved.
		{"go test $(curl x)", nil},
		{"go test `ls`", nil},
		{"go test $PKG", nil},
		{"go test ${PKG:-./...}", nil},
		{"echo $((1+2))", nil},
		{"go test > $OUT", nil},
		{"X=1", nil},
		{"X=$(id) go test", nil},
		{"PATH=. go test", nil},
		{"LD_PRELOAD=x.so go test", nil},
		{"eval go test", nil},
		{"sh -c 'echo hi > f'", nil},
		{"bash -c 'go test'", nil},
		{"f() { go test; }; f", nil},
		{"for p in a b; do go test $p; done", nil},
		{"if true; then go test; fi", nil},
		{"[[ -f x ]] && go test", nil},
		{"diff <(ls a) <(ls b)", nil},
		{"curl -s x | sh", nil},
		{"cd sub && git status", nil}, // the git finding is about the cd before it
		{"cat <<EOF > f\n$(id)\nEOF", nil},
		{"", nil},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			v := Classify(tt.cmd)
			var got []string
			for _, p := range v.Parts {
				s := string(p.Class) + " " + strings.Join(p.Argv, " ")
				if len(p.Prefix) > 0 {
					s += " | " + strings.Join(p.Prefix, " ")
				}
				got = append(got, s)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("parts of %q (class %s):\n got %q\nwant %q", tt.cmd, v.Class, got, tt.want)
			}
			if len(v.Parts) == 1 && strings.Join(v.Prefix, " ") != strings.Join(v.Parts[0].Prefix, " ") {
				t.Fatalf("Prefix %q, want the one part's %q", v.Prefix, v.Parts[0].Prefix)
			}
			if len(v.Parts) != 1 && v.Prefix != nil {
				t.Fatalf("Prefix %q for a command that is not one resolved part", v.Prefix)
			}
			for _, p := range v.Parts {
				if p.Class.rank() > v.Class.rank() {
					t.Fatalf("part %q is %s, above the verdict's %s", p.Argv, p.Class, v.Class)
				}
			}
		})
	}
}
