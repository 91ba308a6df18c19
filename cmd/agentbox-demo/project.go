package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// The sample project: a tiny shell "calculator" with a planted bug (mul adds)
// and a test script that records its results in test-results.txt, so a test
// run has a side effect that undo must remove.
var sampleProject = map[string]string{
	"README.md": `# calc

A tiny shell calculator used by the agentbox demo.

Run the tests with: sh test.sh
`,
	"calc.sh": `# calc.sh: integer arithmetic helpers.
add() { echo $(( $1 + $2 )); }
sub() { echo $(( $1 - $2 )); }
mul() { echo $(( $1 + $2 )); }
`,
	"test.sh": `#!/bin/sh
# test.sh: runs the calculator's tests and records the results.
. ./calc.sh
fail=0
check() {
	if [ "$2" = "$3" ]; then
		echo "ok   $1"
	else
		echo "FAIL $1: got $2, want $3"
		fail=1
	fi
}
{
	check "add 2 3" "$(add 2 3)" 5
	check "sub 7 4" "$(sub 7 4)" 3
	check "mul 6 7" "$(mul 6 7)" 42
} | tee test-results.txt
grep -q '^FAIL' test-results.txt && exit 1
exit 0
`,
	"escape.sh": `#!/bin/sh
# escape.sh: what a malicious command would try. Every line must fail.
try() {
	name=$1; shift
	if ( "$@" ) >/dev/null 2>&1; then echo "ESCAPED: $name"; else echo "blocked: $name"; fi
}
try "write /etc/agentbox-escape" sh -c 'echo pwned > /etc/agentbox-escape'
try "write the parent of the workspace" sh -c 'echo pwned > ../agentbox-escape'
try "read /etc/shadow" sh -c 'test -s /etc/shadow && cat /etc/shadow'
try "read /root" sh -c 'ls /root/.ssh 2>/dev/null | grep -q .'
try "reach the network (TCP 1.1.1.1:80)" sh -c 'bash -c "exec 3<>/dev/tcp/1.1.1.1/80" || nc -w 3 1.1.1.1 80 </dev/null || wget -q -T 3 -O /dev/null http://1.1.1.1/'
echo "network interfaces: $(ls /sys/class/net 2>/dev/null | tr '\n' ' ')"
try "reach the docker socket" sh -c 'test -S /var/run/docker.sock || test -S /run/docker.sock || test -S /run/abdev/docker.sock'
exit 0
`,
}

// writeSampleProject creates the sample project in dir.
func writeSampleProject(dir string) error {
	for name, body := range sampleProject {
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".sh" {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
			return fmt.Errorf("sample project: %w", err)
		}
	}
	return nil
}

// treeDigest hashes every regular file's path, mode and content under dir
// (and the type of anything else), so two states of the workspace can be
// compared exactly.
func treeDigest(dir string) (string, []string, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		line := fmt.Sprintf("%s %s", rel, info.Mode())
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:8])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		fmt.Fprintln(h, l)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), lines, nil
}
