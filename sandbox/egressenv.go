package sandbox

import (
	"strconv"
)

// EgressPort is the loopback port agentbox init listens on inside every
// container for the egress proxy (127.0.0.1 only; the container has no
// other interface).
const EgressPort = 3128

// egressEnv is the environment that sends every toolchain's traffic to
// init's listener on 127.0.0.1:port: the proxy variables in both cases
// (NO_PROXY empty: nothing bypasses it, there is no route anyway), Node's
// built-in fetch (NODE_USE_ENV_PROXY), npm, pip, cargo and Java. git and
// curl read the variables themselves. With allowlist, GOPROXY and GOSUMDB
// are emptied so that go uses its defaults through the proxy (the module
// cache environment sets GOPROXY=off, right only when nothing is
// reachable); without it, GOPROXY=off stays and every tool that tries
// gets the proxy's immediate "this sandbox has no network" answer instead
// of retrying DNS.
//
// These entries are reserved: [Env] applies them after passthrough and
// [Spec].Env ([WithEgress]), so neither config nor a call can route around
// the proxy or point it elsewhere.
func egressEnv(port int, allowlist bool) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(port)
	p := strconv.Itoa(port)
	env := []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "ALL_PROXY=" + u,
		"http_proxy=" + u, "https_proxy=" + u, "all_proxy=" + u,
		"NO_PROXY=", "no_proxy=",
		"NODE_USE_ENV_PROXY=1",
		"npm_config_proxy=" + u, "npm_config_https_proxy=" + u, "npm_config_noproxy=",
		"PIP_PROXY=" + u,
		"CARGO_HTTP_PROXY=" + u,
		"JAVA_TOOL_OPTIONS=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=" + p +
			" -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=" + p + " -Dhttp.nonProxyHosts=",
	}
	if allowlist {
		env = append(env, "GOPROXY=", "GOSUMDB=")
	}
	return env
}

// WithEgress makes [Env] end with egressEnv(port, allowlist): the proxy
// settings win over passthrough and extra entries.
func WithEgress(port int, allowlist bool) EnvOption {
	return func(o *envOptions) { o.egress = egressEnv(port, allowlist) }
}
