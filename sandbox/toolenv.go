package sandbox

// ToolEnv is the environment that points the toolchains at the mounted
// caches: the persistent build cache (when buildCache) and each
// dependency cache, later entries winning (a host npm cache, read-only,
// replaces the build cache's writable one). Commands' own [Spec].Env comes
// on top of it.
func ToolEnv(caches []DepCache, buildCache bool) []string {
	var out []string
	if buildCache {
		out = append(out, buildCacheEnv()...)
	} else {
		out = append(out, "npm_config_logs_dir="+Home+"/.npm/_logs")
	}
	for _, c := range caches {
		out = append(out, c.Env...)
	}
	return out
}
