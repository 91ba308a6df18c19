//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// npmCaches are the npm prefixes installed in this run, by cache name.
var npmCaches sync.Map // name → *npmInstall

type npmInstall struct {
	once sync.Once
	dir  string
	err  error
}

// npmCache installs the pinned npm packages pkgs into the tests' cache
// directory name (once per run; again only when the list changed: a stamp
// file records it) and returns that npm prefix. A missing npm or a failed
// install fails the test: real clients and hook tools are what the tests
// check against.
func npmCache(t *testing.T, name string, pkgs ...string) string {
	t.Helper()
	v, _ := npmCaches.LoadOrStore(name, &npmInstall{})
	in := v.(*npmInstall)
	in.once.Do(func() { in.dir, in.err = installNPM(name, pkgs) })
	if in.err != nil {
		t.Fatal(in.err)
	}
	return in.dir
}

func installNPM(name string, pkgs []string) (string, error) {
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("npm is required (apt-get install nodejs npm): %v", err)
	}
	dir, err := testCacheDir(name)
	if err != nil {
		return "", err
	}
	want := strings.Join(pkgs, " ")
	stamp := filepath.Join(dir, "installed")
	if b, _ := os.ReadFile(stamp); string(b) == want {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	args := append([]string{"install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir}, pkgs...)
	if out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm install %s: %v\n%s", want, err, out)
	}
	return dir, os.WriteFile(stamp, []byte(want), 0o644)
}
