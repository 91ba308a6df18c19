package sandbox

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// GitIdentity is who commits made in the sandbox are by: the workspace
// owner's user.name and user.email, and nothing else of their git config
// (no includes, credentials, aliases or program-running keys).
type GitIdentity struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// OwnerGitIdentity reads user.name and user.email from the owner's global
// git config files the way git ranks them ($XDG_CONFIG_HOME/git/config,
// taken here as ~/.config/git/config, then ~/.gitconfig, the later one
// winning per key). Include directives are not followed. Missing files
// give an empty identity.
func OwnerGitIdentity(home string) GitIdentity {
	var id GitIdentity
	if home == "" {
		return id
	}
	for _, f := range []string{filepath.Join(home, ".config", "git", "config"), filepath.Join(home, ".gitconfig")} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		got := ParseGitUser(io.LimitReader(fh, 1<<20))
		fh.Close()
		if got.Name != "" {
			id.Name = got.Name
		}
		if got.Email != "" {
			id.Email = got.Email
		}
	}
	return id
}

// Env is the identity as GIT_AUTHOR_* and GIT_COMMITTER_* entries; except
// drops the keys a repository's own config sets (git ranks these
// variables above any config, and a repository's own user.name is meant
// to win over the owner's global one).
func (id GitIdentity) Env(except GitIdentity) []string {
	var out []string
	if id.Name != "" && except.Name == "" {
		out = append(out, "GIT_AUTHOR_NAME="+id.Name, "GIT_COMMITTER_NAME="+id.Name)
	}
	if id.Email != "" && except.Email == "" {
		out = append(out, "GIT_AUTHOR_EMAIL="+id.Email, "GIT_COMMITTER_EMAIL="+id.Email)
	}
	return out
}

// ParseGitUser reads user.name and user.email from git config text. It
// understands sections ([user], case-insensitive; a subsection such as
// [user "x"] is another section), key = value with ; and # comments,
// double quotes and the \" \\ \n \t escapes. A value with a control
// character or a continuation line is ignored. The last value wins.
func ParseGitUser(r io.Reader) GitIdentity {
	var id GitIdentity
	inUser := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				inUser = false
				continue
			}
			inUser = strings.EqualFold(strings.TrimSpace(line[1:end]), "user")
			line = strings.TrimSpace(line[end+1:])
			if line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		}
		if !inUser {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		val, ok := gitValue(strings.TrimSpace(v))
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "name":
			id.Name = val
		case "email":
			id.Email = val
		}
	}
	return id
}

// gitValue decodes one config value; ok is false for what is refused.
func gitValue(s string) (string, bool) {
	var b strings.Builder
	quoted := false
	pendingSpace := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted = !quoted
			continue
		case !quoted && (c == '#' || c == ';'):
			i = len(s)
			continue
		case c == '\\':
			if i+1 >= len(s) {
				return "", false // continuation line
			}
			i++
			switch s[i] {
			case '"', '\\':
				c = s[i]
			case 'n':
				c = '\n'
			case 't':
				c = '\t'
			default:
				return "", false
			}
		case !quoted && (c == ' ' || c == '\t'):
			pendingSpace++
			continue
		}
		if pendingSpace > 0 && b.Len() > 0 {
			b.WriteString(strings.Repeat(" ", pendingSpace))
		}
		pendingSpace = 0
		b.WriteByte(c)
	}
	out := b.String()
	if quoted || out == "" {
		return "", false
	}
	for _, r := range out {
		if r < 0x20 || r == 0x7f {
			return "", false
		}
	}
	return out, true
}
