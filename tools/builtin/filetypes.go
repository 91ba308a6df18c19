package builtin

import (
	"path"
	"sort"
	"strings"
)

// fileTypes maps Grep's `type` names (as rg names them) to file name globs.
var fileTypes = map[string][]string{
	"c":          {"*.c", "*.h", "*.H"},
	"cpp":        {"*.C", "*.cc", "*.cpp", "*.cxx", "*.c++", "*.h", "*.hh", "*.hpp", "*.hxx", "*.h++", "*.inl"},
	"cs":         {"*.cs"},
	"css":        {"*.css", "*.scss", "*.sass", "*.less"},
	"dart":       {"*.dart"},
	"docker":     {"Dockerfile", "Dockerfile.*", "*.Dockerfile", "*.dockerfile"},
	"elixir":     {"*.ex", "*.exs", "*.eex", "*.heex"},
	"go":         {"*.go"},
	"h":          {"*.h", "*.hh", "*.hpp", "*.hxx"},
	"haskell":    {"*.hs", "*.lhs"},
	"html":       {"*.htm", "*.html", "*.xhtml"},
	"java":       {"*.java", "*.jsp"},
	"js":         {"*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"},
	"json":       {"*.json", "*.jsonl", "*.geojson"},
	"kotlin":     {"*.kt", "*.kts"},
	"lua":        {"*.lua"},
	"make":       {"Makefile", "makefile", "GNUmakefile", "*.mk", "*.mak"},
	"markdown":   {"*.md", "*.markdown", "*.mdx", "*.mkd"},
	"md":         {"*.md", "*.markdown", "*.mdx", "*.mkd"},
	"php":        {"*.php", "*.phtml"},
	"proto":      {"*.proto"},
	"py":         {"*.py", "*.pyi"},
	"python":     {"*.py", "*.pyi"},
	"r":          {"*.R", "*.r", "*.Rmd"},
	"rb":         {"*.rb", "*.gemspec", "Gemfile", "Rakefile"},
	"ruby":       {"*.rb", "*.gemspec", "Gemfile", "Rakefile"},
	"rust":       {"*.rs"},
	"scala":      {"*.scala", "*.sbt"},
	"sh":         {"*.sh", "*.bash", "*.zsh", "*.ksh", ".bashrc", ".bash_profile", ".profile", ".zshrc"},
	"sql":        {"*.sql"},
	"swift":      {"*.swift"},
	"tf":         {"*.tf", "*.tfvars"},
	"toml":       {"*.toml", "Cargo.lock"},
	"ts":         {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"typescript": {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"txt":        {"*.txt"},
	"xml":        {"*.xml", "*.xsd", "*.xsl", "*.xslt", "*.svg"},
	"yaml":       {"*.yaml", "*.yml"},
	"zig":        {"*.zig"},
}

// typeNames lists the known types, sorted, for error messages.
func typeNames() string {
	names := make([]string, 0, len(fileTypes))
	for n := range fileTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// matchesType reports whether the base name of rel has one of globs.
func matchesAnyBase(globs []string, rel string) bool {
	base := path.Base(rel)
	for _, g := range globs {
		if ok, _ := path.Match(g, base); ok {
			return true
		}
	}
	return false
}
