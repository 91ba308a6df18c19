package sandbox_test

import (
	"fmt"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
)

func ExampleNewCapture() {
	c := sandbox.NewCapture(8)
	c.Write([]byte(strings.Repeat("a", 4) + strings.Repeat("-", 100) + "zzzz"))
	fmt.Printf("%q dropped %d\n", c.Bytes(), c.Dropped())
	// Output: "aaaa\n[... 100 bytes omitted ...]\nzzzz" dropped 100
}

func ExampleEnv() {
	host := map[string]string{"GOFLAGS": "-mod=mod", "AWS_SECRET_ACCESS_KEY": "x"}
	getenv := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	for _, kv := range sandbox.Env("", []string{"GOFLAGS"}, getenv, []string{"CI=1"}) {
		if strings.HasPrefix(kv, "GO") || strings.HasPrefix(kv, "AWS") || strings.HasPrefix(kv, "CI") || strings.HasPrefix(kv, "HOME") {
			fmt.Println(kv)
		}
	}
	// Output:
	// CI=1
	// GOFLAGS=-mod=mod
	// HOME=/tmp/home
}
