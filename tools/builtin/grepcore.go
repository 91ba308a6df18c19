package builtin

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"regexp/syntax"
	"runtime"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/tools"
)

// Grep output modes.
const (
	modeContent = "content"
	modeFiles   = "files_with_matches"
	modeCount   = "count"
)

const (
	maxGrepLineChars = 500       // matched lines longer than this are cut
	maxGrepFileBytes = 256 << 20 // larger files are not searched
)

// grepSpec is a compiled Grep query.
type grepSpec struct {
	re            *regexp.Regexp
	literal       []byte // a literal every match contains, or nil
	fold          bool   // literal is lower-case and matched ignoring case
	rare          int    // index of the literal's rarest byte (fold only)
	multiline     bool
	mode          string
	lineNumbers   bool
	before, after int
	include       []string // doublestar globs; a file must match one (when any)
	exclude       []string // doublestar globs; a file matching one is left out
	typeGlobs     []string // base-name globs from `type`
	workers       int
	hide          *denyFilter // what deny rules hide (nil: nothing)
}

// compileGrepPattern builds the regexp for pattern: RE2 syntax, ^ and $ at
// line boundaries, and with multiline `.` also matching newlines.
func compileGrepPattern(pattern string, ignoreCase, multiline bool) (*regexp.Regexp, error) {
	flags := "m"
	if ignoreCase {
		flags += "i"
	}
	if multiline {
		flags += "s"
	}
	return regexp.Compile("(?" + flags + ")" + pattern)
}

// parseGlobs splits Grep's glob parameter: globs separated by spaces or
// commas outside braces; a leading ! excludes.
func parseGlobs(s string) (include, exclude []string, err error) {
	var parts []string
	depth, startAt := 0, 0
	for i, r := range s {
		switch {
		case r == '{':
			depth++
		case r == '}':
			depth--
		case (r == ' ' || r == ',') && depth == 0:
			parts = append(parts, s[startAt:i])
			startAt = i + 1
		}
	}
	parts = append(parts, s[startAt:])
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if !doublestar.ValidatePattern(p) {
			return nil, nil, fmt.Errorf("invalid glob %q", p)
		}
		if neg {
			exclude = append(exclude, p)
		} else {
			include = append(include, p)
		}
	}
	return include, exclude, nil
}

// globMatch matches a glob as rg does: a glob without a slash matches the
// base name, one with a slash the path relative to the search root.
func globMatch(glob, rel string) bool {
	if !strings.Contains(glob, "/") {
		return doublestar.MatchUnvalidated(glob, path.Base(rel))
	}
	return doublestar.MatchUnvalidated(strings.TrimPrefix(glob, "/"), rel)
}

// wants reports whether the file rel (relative to the search root) is to be
// searched under the spec's globs and type.
func (s *grepSpec) wants(rel string) bool {
	for _, g := range s.exclude {
		if globMatch(g, rel) {
			return false
		}
	}
	if len(s.include) > 0 {
		ok := false
		for _, g := range s.include {
			if globMatch(g, rel) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(s.typeGlobs) > 0 && !matchesAnyBase(s.typeGlobs, rel) {
		return false
	}
	return true
}

// grepLine is one output line of a file.
type grepLine struct {
	n     int
	text  string
	match bool
}

// grepFile is what Grep found in one file.
type grepFile struct {
	rel   string // relative to the search root
	mtime time.Time
	count int        // matching lines
	lines []grepLine // content mode: matches and context, in order
}

// grepRun searches every wanted file below start (relative to root) and
// returns the files with matches, sorted by path relative to start. When
// start is a file, just that file is searched.
func grepRun(ctx context.Context, root *os.Root, start string, spec *grepSpec) ([]grepFile, error) {
	fi, err := root.Stat(start)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		dir, name := path.Split(start)
		dir = strings.TrimSuffix(dir, "/")
		if dir == "" {
			dir = "."
		}
		d, err := root.Open(dir)
		if err != nil {
			return nil, err
		}
		defer d.Close()
		gf, ok := grepOne(fileEntry{dirfd: int(d.Fd()), dir: dir, name: name, typ: unix.DT_REG}, spec, nil)
		if !ok {
			return nil, nil
		}
		gf.rel = name
		return []grepFile{gf}, nil
	}
	workers := spec.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	perWorker := make([][]grepFile, workers)
	bufs := make([][]byte, workers)
	err = parallelWalk(ctx, root, start, workers, true, spec.hide, nil, func(w int, e fileEntry) {
		if e.typ != unix.DT_REG {
			return
		}
		name := relTo(start, e.rel())
		if !spec.wants(name) {
			return
		}
		gf, ok := grepOne(e, spec, &bufs[w])
		if !ok {
			return
		}
		gf.rel = name
		perWorker[w] = append(perWorker[w], gf)
	})
	if err != nil {
		return nil, err
	}
	var results []grepFile
	for _, r := range perWorker {
		results = append(results, r...)
	}
	sort.Slice(results, func(i, j int) bool { return results[i].rel < results[j].rel })
	return results, nil
}

// grepOne searches one file. ok is false when it has no match, is not a
// regular file, is binary, too large or unreadable. buf, when not nil, is
// a reusable read buffer.
func grepOne(e fileEntry, spec *grepSpec, buf *[]byte) (gf grepFile, ok bool) {
	fd, st, err := openEntry(e)
	if err != nil {
		return gf, false
	}
	defer unix.Close(fd)
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxGrepFileBytes {
		return gf, false
	}
	var data []byte
	if buf != nil {
		data = readAllFd(fd, st.Size, *buf)
		*buf = data[:0]
	} else {
		data = readAllFd(fd, st.Size, nil)
	}
	head := data
	if len(head) > sniffBytes {
		head = head[:sniffBytes]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return gf, false
	}
	count, lines := grepContent(data, spec)
	if count == 0 {
		return gf, false
	}
	return grepFile{mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec), count: count, lines: lines}, true
}

// grepContent finds the matching lines of data. It returns the number of
// matching lines and, in content mode, the lines to print (with context).
func grepContent(data []byte, spec *grepSpec) (int, []grepLine) {
	if spec.literal != nil {
		if spec.fold {
			if !containsFold(data, spec.literal, spec.rare) {
				return 0, nil
			}
		} else if !bytes.Contains(data, spec.literal) {
			return 0, nil
		}
	}
	loc := spec.re.FindIndex(data)
	if loc == nil {
		return 0, nil
	}
	var matched []int // 0-based line numbers, ascending, unique
	if spec.multiline {
		matched = matchedLinesSpanning(data, spec.re)
	} else if spec.mode == modeFiles && bytes.IndexByte(data[loc[0]:loc[1]], '\n') < 0 {
		return 1, nil
	} else {
		matched = matchedLines(data, spec.re)
	}
	if len(matched) == 0 || spec.mode != modeContent {
		return len(matched), nil
	}
	return len(matched), contextLines(data, matched, spec.before, spec.after)
}

// matchedLines returns the lines with a match that lies within one line.
// It searches the whole buffer once and falls back to line-by-line search
// only when a match crosses a newline (a pattern such as `a\sb`).
func matchedLines(data []byte, re *regexp.Regexp) []int {
	locs := re.FindAllIndex(data, -1)
	var out []int
	line, pos := 0, 0
	for _, l := range locs {
		if bytes.IndexByte(data[l[0]:l[1]], '\n') >= 0 {
			return matchedLinesSlow(data, re)
		}
		line += bytes.Count(data[pos:l[0]], []byte{'\n'})
		pos = l[0]
		if len(out) == 0 || out[len(out)-1] != line {
			// A match at the very end, after a final newline, is no line.
			if l[0] == len(data) && (len(data) == 0 || data[len(data)-1] == '\n') {
				continue
			}
			out = append(out, line)
		}
	}
	return out
}

func matchedLinesSlow(data []byte, re *regexp.Regexp) []int {
	var out []int
	for i, l := range splitLines(data) {
		if re.Match(l) {
			out = append(out, i)
		}
	}
	return out
}

// matchedLinesSpanning returns every line any match touches (multiline).
func matchedLinesSpanning(data []byte, re *regexp.Regexp) []int {
	var out []int
	line, pos := 0, 0
	for _, l := range re.FindAllIndex(data, -1) {
		if l[0] == len(data) && (len(data) == 0 || data[len(data)-1] == '\n') {
			continue // an empty match after the last line
		}
		line += bytes.Count(data[pos:l[0]], []byte{'\n'})
		pos = l[0]
		end := l[1]
		if end > l[0] && data[end-1] == '\n' {
			end--
		}
		last := line + bytes.Count(data[l[0]:end], []byte{'\n'})
		for n := line; n <= last; n++ {
			if len(out) == 0 || out[len(out)-1] < n {
				out = append(out, n)
			}
		}
	}
	return out
}

// splitLines splits data into lines without their line endings; a final
// newline does not start another line.
func splitLines(data []byte) [][]byte {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		lines[i] = bytes.TrimSuffix(l, []byte{'\r'})
	}
	return lines
}

// contextLines returns the matched lines plus before/after context lines,
// in order.
func contextLines(data []byte, matched []int, before, after int) []grepLine {
	lines := splitLines(data)
	isMatch := make(map[int]bool, len(matched))
	for _, m := range matched {
		isMatch[m] = true
	}
	var out []grepLine
	next := 0 // first line not yet emitted
	for _, m := range matched {
		from := max(m-before, next)
		to := min(m+after, len(lines)-1)
		for n := from; n <= to; n++ {
			out = append(out, grepLine{n: n + 1, text: cutLine(lines[n]), match: isMatch[n]})
		}
		next = max(next, to+1)
	}
	return out
}

func cutLine(b []byte) string {
	if len(b) <= maxGrepLineChars {
		return string(b)
	}
	cut := maxGrepLineChars
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]) + " … [line cut]"
}

// formatGrep renders results for the model. base is the absolute path the
// results' rel paths are relative to; headLimit (0 = none) caps the
// entries shown.
func formatGrep(results []grepFile, spec *grepSpec, base string, headLimit int) (text string, shown, total int) {
	var b strings.Builder
	// Names that are not valid UTF-8 are shown escaped (tools.EncodeName).
	abs := func(rel string) string { return tools.EncodeName(path.Join(base, rel)) }
	switch spec.mode {
	case modeFiles:
		total = len(results)
		if total == 0 {
			return "No files found", 0, 0
		}
		sorted := append([]grepFile(nil), results...)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].mtime.After(sorted[j].mtime) })
		shown = total
		if headLimit > 0 && shown > headLimit {
			shown = headLimit
		}
		fmt.Fprintf(&b, "Found %d %s", total, plural(total, "file", "files"))
		if shown < total {
			fmt.Fprintf(&b, " (showing the %d most recently modified; head_limit=%d)", shown, headLimit)
		}
		b.WriteString("\n")
		for _, r := range sorted[:shown] {
			b.WriteString(abs(r.rel) + "\n")
		}
	case modeCount:
		total = len(results)
		if total == 0 {
			return "No matches found", 0, 0
		}
		shown = total
		if headLimit > 0 && shown > headLimit {
			shown = headLimit
		}
		sum := 0
		for _, r := range results {
			sum += r.count
		}
		for _, r := range results[:shown] {
			fmt.Fprintf(&b, "%s:%d\n", abs(r.rel), r.count)
		}
		fmt.Fprintf(&b, "\nFound %d total %s across %d %s.", sum, plural(sum, "matching line", "matching lines"), total, plural(total, "file", "files"))
		if shown < total {
			fmt.Fprintf(&b, " Showing %d files (head_limit=%d).", shown, headLimit)
		}
		b.WriteString("\n")
	default:
		for _, r := range results {
			total += len(r.lines)
		}
		if total == 0 {
			return "No matches found", 0, 0
		}
		withContext := spec.before > 0 || spec.after > 0
		for fi, r := range results {
			p := abs(r.rel)
			prev := -1
			for _, l := range r.lines {
				if headLimit > 0 && shown >= headLimit {
					break
				}
				if withContext && ((prev >= 0 && l.n != prev+1) || (prev < 0 && fi > 0 && shown > 0)) {
					b.WriteString("--\n")
				}
				sep := "-"
				if l.match {
					sep = ":"
				}
				if spec.lineNumbers {
					fmt.Fprintf(&b, "%s%s%d%s%s\n", p, sep, l.n, sep, l.text)
				} else {
					fmt.Fprintf(&b, "%s%s%s\n", p, sep, l.text)
				}
				prev = l.n
				shown++
			}
		}
		if shown < total {
			fmt.Fprintf(&b, "\n[Showing %d of %d lines (head_limit=%d).]\n", shown, total, headLimit)
		}
	}
	return strings.TrimRight(b.String(), "\n"), shown, total
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// requiredLiteral returns a literal every match of pattern must contain
// (the longest literal at the top level of the pattern), or nil. With
// ignoreCase the literal is returned lower-cased and fold is true (ASCII
// literals only). Files without it need no regexp scan.
func requiredLiteral(pattern string, ignoreCase bool) (lit []byte, fold bool) {
	if ignoreCase {
		pattern = "(?i)" + pattern
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture && len(re.Sub) == 1 {
		re = re.Sub[0]
	}
	litOf := func(r *syntax.Regexp) ([]byte, bool) {
		if r.Op != syntax.OpLiteral {
			return nil, false
		}
		s := string(r.Rune)
		if r.Flags&syntax.FoldCase == 0 {
			return []byte(s), false
		}
		// Keep the longest run of ASCII without k and s, whose case folds
		// include non-ASCII runes (the Kelvin sign, the long s).
		var best, cur []rune
		for _, c := range r.Rune {
			if c >= utf8.RuneSelf || c == 'k' || c == 'K' || c == 's' || c == 'S' {
				cur = nil
				continue
			}
			cur = append(cur, c)
			if len(cur) > len(best) {
				best = append([]rune(nil), cur...)
			}
		}
		if len(best) < 2 {
			return nil, false
		}
		return []byte(strings.ToLower(string(best))), true
	}
	if l, f := litOf(re); l != nil {
		return l, f
	}
	if re.Op != syntax.OpConcat {
		return nil, false
	}
	var best []byte
	bestFold := false
	for _, sub := range re.Sub {
		for sub.Op == syntax.OpCapture && len(sub.Sub) == 1 {
			sub = sub.Sub[0]
		}
		if l, f := litOf(sub); len(l) > len(best) {
			best, bestFold = l, f
		}
	}
	if len(best) < 2 {
		return nil, false
	}
	return best, bestFold
}

// letterRank orders ASCII letters from rare to common in source code, for
// picking the byte a case-insensitive search scans for.
const letterRank = "zqjxkvbywgpfmucdlhrsnioate"

// rareIndex returns the index in lit (lower-case ASCII) of its rarest byte.
func rareIndex(lit []byte) int {
	best, bestRank := 0, 1000
	for i, c := range lit {
		r := 0 // non-letters are rarer than any letter, except blanks
		if c >= 'a' && c <= 'z' {
			r = 10 + strings.IndexByte(letterRank, c)
		} else if c == ' ' || c == '\t' {
			r = 100
		}
		if r < bestRank {
			best, bestRank = i, r
		}
	}
	return best
}

// containsFold reports whether data contains lit (lower-case ASCII)
// ignoring ASCII case. It scans for the literal's rarest byte in both cases
// with IndexByte and checks each candidate.
func containsFold(data, lit []byte, rare int) bool {
	if len(lit) == 0 {
		return true
	}
	lc := lit[rare]
	uc := lc
	if lc >= 'a' && lc <= 'z' {
		uc = lc - 'a' + 'A'
	}
	nextL, nextU := -2, -2 // -2: not searched yet; -1: none left
	pos := rare
	for pos < len(data) {
		if nextL != -1 && nextL < pos {
			nextL = indexFrom(data, lc, pos)
		}
		if uc != lc && nextU != -1 && nextU < pos {
			nextU = indexFrom(data, uc, pos)
		}
		cand := nextL
		if uc != lc && nextU >= 0 && (cand < 0 || nextU < cand) {
			cand = nextU
		}
		if cand < 0 {
			return false
		}
		start := cand - rare
		if start+len(lit) <= len(data) && bytes.EqualFold(data[start:start+len(lit)], lit) {
			return true
		}
		pos = cand + 1
	}
	return false
}

func indexFrom(data []byte, c byte, from int) int {
	i := bytes.IndexByte(data[from:], c)
	if i < 0 {
		return -1
	}
	return from + i
}
