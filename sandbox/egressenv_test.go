package sandbox

import (
	"strings"
	"testing"
)

func TestEgressEnvReserved(t *testing.T) {
	host := map[string]string{"HTTPS_PROXY": "http://evil:1", "NO_PROXY": "*", "NODE_USE_ENV_PROXY": "0"}
	getenv := func(k string) (string, bool) { v, ok := host[k]; return v, ok }
	for _, allowlist := range []bool{false, true} {
		env := Env("", []string{"HTTPS_PROXY", "NO_PROXY", "NODE_USE_ENV_PROXY"}, getenv,
			[]string{"http_proxy=http://evil:2", "GOPROXY=off", "npm_config_proxy=http://evil:3"}, WithEgress(EgressPort, allowlist))
		m := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy", "PIP_PROXY", "CARGO_HTTP_PROXY"} {
			if m[k] != "http://127.0.0.1:3128" {
				t.Errorf("allowlist=%v: %s=%q", allowlist, k, m[k])
			}
		}
		if v, ok := m["NO_PROXY"]; !ok || v != "" {
			t.Errorf("NO_PROXY=%q (set %v); want empty", v, ok)
		}
		if m["NODE_USE_ENV_PROXY"] != "1" || !strings.Contains(m["JAVA_TOOL_OPTIONS"], "-Dhttps.proxyPort=3128") {
			t.Errorf("node/java settings: %q %q", m["NODE_USE_ENV_PROXY"], m["JAVA_TOOL_OPTIONS"])
		}
		if want := map[bool]string{false: "off", true: ""}[allowlist]; m["GOPROXY"] != want {
			t.Errorf("allowlist=%v: GOPROXY=%q; want %q", allowlist, m["GOPROXY"], want)
		}
	}
}
