package builtin

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// editFailKind says why an edit could not be applied; the tool maps it to a
// tools.ErrorKind.
type editFailKind int

const (
	failInvalid   editFailKind = iota // the edit itself is malformed (identical strings, ...)
	failNotFound                      // old_string is not in the file
	failAmbiguous                     // old_string matches more than once
)

// editFailure is an edit that cannot be applied. msg is written for the
// model.
type editFailure struct {
	kind editFailKind
	msg  string
}

func (e *editFailure) Error() string { return e.msg }

// editOutcome is the result of applying one edit in memory.
type editOutcome struct {
	content      string
	replacements int
	// fuzzy is set when the exact text was not found and a unique
	// whitespace-normalized match was replaced instead.
	fuzzy bool
	// reindented is set when a fuzzy match also re-indented new_string to
	// the indentation found in the file.
	reindented bool
	// firstLine is the 1-based line where the (first) replacement starts.
	firstLine int
	// spans are the replacements made, in order, in offsets of the
	// content given to applyEdit.
	spans []editSpan
}

// editSpan is one replacement: content[start:end] became text.
type editSpan struct {
	start, end int
	text       string
}

// usesCRLF reports whether content's line endings are mostly CRLF.
func usesCRLF(content string) bool {
	crlf := strings.Count(content, "\r\n")
	if crlf == 0 {
		return false
	}
	lf := strings.Count(content, "\n")
	return crlf*2 >= lf
}

// toCRLF converts every line ending in s to CRLF.
func toCRLF(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\n", "\r\n")
}

// applyEdit replaces old with new in content. Without replaceAll old must
// occur exactly once. In a CRLF file, LF line endings in old and new are
// taken as CRLF. When old is not found verbatim but exactly one
// whitespace-normalized match exists, that match is replaced and the outcome
// says so. Failures are *editFailure values with text for the model.
func applyEdit(content, old, new string, replaceAll bool) (editOutcome, error) {
	if old == new {
		return editOutcome{}, &editFailure{failInvalid, "No changes to make: old_string and new_string are exactly the same."}
	}
	if old == "" {
		if content == "" {
			return editOutcome{content: new, replacements: 1, firstLine: 1}, nil
		}
		return editOutcome{}, &editFailure{failInvalid, "old_string is empty but the file is not. An empty old_string only creates a new file or fills an empty one; use Write to replace the whole content."}
	}
	if !utf8.ValidString(content) {
		return applyEditShown(content, old, new, replaceAll)
	}
	if usesCRLF(content) && !strings.Contains(old, "\r") {
		old, new = toCRLF(old), toCRLF(new)
	}
	n := strings.Count(content, old)
	switch {
	case n == 1 || (n > 1 && replaceAll):
		first := strings.Index(content, old)
		var out string
		var spans []editSpan
		if replaceAll {
			out = strings.ReplaceAll(content, old, new)
			for off := 0; ; {
				i := strings.Index(content[off:], old)
				if i < 0 {
					break
				}
				spans = append(spans, editSpan{off + i, off + i + len(old), new})
				off += i + len(old)
			}
		} else {
			out = content[:first] + new + content[first+len(old):]
			spans = []editSpan{{first, first + len(old), new}}
		}
		return editOutcome{content: out, replacements: n, firstLine: lineOf(content, first), spans: spans}, nil
	case n > 1:
		return editOutcome{}, &editFailure{failAmbiguous, fmt.Sprintf(
			"Found %d matches of old_string (at lines %s), but replace_all is false. To replace every occurrence, set replace_all to true. To replace only one, add surrounding lines to old_string so that it matches exactly one place.",
			n, matchLines(content, old, 10))}
	}
	return fuzzyEdit(content, old, new)
}

// fuzzyEdit is applyEdit's fallback when old is not in content verbatim.
func fuzzyEdit(content, old, new string) (editOutcome, error) {
	normFile, idx := normalizeWS(content)
	normOld, _ := normalizeWS(old)
	normOld = strings.Trim(normOld, "\n")
	if normOld == "" {
		return editOutcome{}, notFound(content, old)
	}
	var hits []int
	for off := 0; ; {
		i := strings.Index(normFile[off:], normOld)
		if i < 0 {
			break
		}
		hits = append(hits, off+i)
		off += i + 1
		if len(hits) > 10 {
			break
		}
	}
	switch len(hits) {
	case 0:
		return editOutcome{}, notFound(content, old)
	case 1:
	default:
		lines := make([]string, 0, len(hits))
		for _, h := range hits {
			lines = append(lines, fmt.Sprint(lineOf(content, idx[h])))
		}
		return editOutcome{}, &editFailure{failAmbiguous, fmt.Sprintf(
			"old_string was not found exactly. Ignoring whitespace it matches %d places (lines %s), so nothing was changed. Read the file again and copy old_string exactly, with enough surrounding lines to match one place.",
			len(hits), strings.Join(lines, ", "))}
	}
	p := hits[0]
	start := idx[p]
	end := idx[p+len(normOld)-1] + 1
	atLineStart := p == 0 || normFile[p-1] == '\n'
	if atLineStart {
		for start > 0 && (content[start-1] == ' ' || content[start-1] == '\t') {
			start--
		}
	}
	if e := p + len(normOld); e == len(normFile) || normFile[e] == '\n' {
		for end < len(content) && (content[end] == ' ' || content[end] == '\t') {
			end++
		}
	}
	out := editOutcome{fuzzy: true, replacements: 1, firstLine: lineOf(content, start)}
	if atLineStart {
		fileIndent := leadingWS(content[start:])
		oldIndent := leadingWS(firstNonBlankLine(old))
		if fileIndent != oldIndent {
			new = reindent(new, indentMap(content[start:end], old), oldIndent, fileIndent)
			out.reindented = true
		}
	}
	out.content = content[:start] + new + content[end:]
	out.spans = []editSpan{{start, end, new}}
	return out, nil
}

// applyEditShown applies an edit to content that is not valid UTF-8. The
// model never saw those bytes: Read's text reaches it as JSON, where each
// one is U+FFFD. So old is matched against the content as shown (a U+FFFD
// in old matches an invalid byte or a real U+FFFD; more than one match is
// ambiguous as always), and every byte outside the replaced text is kept.
// Inside it, the U+FFFDs of new stand for the bytes the matched text's
// U+FFFDs stood for, in order; when their numbers differ that is unclear
// and refused.
func applyEditShown(content, old, new string, replaceAll bool) (editOutcome, error) {
	view, invalid := shownText(content)
	o, err := applyEdit(view, old, new, replaceAll)
	if err != nil {
		return o, err
	}
	raw := func(v int) int { // view offset → content offset
		k, _ := slices.BinarySearch(invalid, v)
		return v - 2*k
	}
	var b strings.Builder
	b.Grow(len(content))
	prev := 0
	for _, sp := range o.spans {
		start, end := raw(sp.start), raw(sp.end)
		b.WriteString(content[prev:start])
		text, err := keepShownBytes(sp.text, view[sp.start:sp.end], content[start:end])
		if err != nil {
			return editOutcome{}, err
		}
		b.WriteString(text)
		prev = end
	}
	b.WriteString(content[prev:])
	o.content = b.String()
	o.spans = nil
	return o, nil
}

// shownText is content as a JSON client sees it: each byte that is not
// valid UTF-8 becomes U+FFFD. invalid lists, in order, the offsets in the
// result where such a byte's U+FFFD starts.
func shownText(content string) (string, []int) {
	var b strings.Builder
	b.Grow(len(content) + len(content)/8)
	var invalid []int
	for i := 0; i < len(content); {
		r, size := utf8.DecodeRuneInString(content[i:])
		if r == utf8.RuneError && size == 1 {
			invalid = append(invalid, b.Len())
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(content[i : i+size])
		}
		i += size
	}
	return b.String(), invalid
}

// keepShownBytes writes text in place of shown, the view of raw: the k-th
// U+FFFD of text becomes the bytes the k-th U+FFFD of shown stands for in
// raw (an invalid byte, or a real U+FFFD).
func keepShownBytes(text, shown, raw string) (string, error) {
	var stands []string
	for i, j := 0, 0; i < len(shown); {
		r, size := utf8.DecodeRuneInString(shown[i:])
		if r != utf8.RuneError {
			i, j = i+size, j+size
			continue
		}
		n := 1 // an invalid byte
		if strings.HasPrefix(raw[j:], string(utf8.RuneError)) {
			n = len(string(utf8.RuneError))
		}
		stands = append(stands, raw[j:j+n])
		i, j = i+size, j+n
	}
	if len(stands) == 0 {
		return text, nil
	}
	got := strings.Count(text, string(utf8.RuneError))
	if got == 0 {
		return text, nil
	}
	if got != len(stands) {
		return "", &editFailure{failInvalid, fmt.Sprintf(
			"new_string has %d U+FFFD (\uFFFD) characters and the text it replaces has %d. In this file U+FFFD stands for bytes that are not UTF-8, so it is unclear which bytes to keep; nothing was changed. Keep each U+FFFD of old_string in new_string, in the same order (they keep the file's bytes), or leave them out to drop those bytes.",
			got, len(stands))}
	}
	var b strings.Builder
	k := 0
	for _, r := range text {
		if r == utf8.RuneError {
			b.WriteString(stands[k])
			k++
			continue
		}
		b.WriteRune(r)
	}
	return b.String(), nil
}

// normalizeWS drops each line's indentation and trailing blanks, collapses
// runs of spaces and tabs to one space and drops CRs. idx maps each byte of
// the result to its offset in s (a collapsed run maps to its first byte; a
// newline to the original newline).
func normalizeWS(s string) (string, []int) {
	var b strings.Builder
	b.Grow(len(s))
	idx := make([]int, 0, len(s))
	lineStart := true
	pendingSpace := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\r', '\f', '\v':
			if !lineStart && pendingSpace < 0 {
				pendingSpace = i
			}
		case '\n':
			pendingSpace = -1
			b.WriteByte('\n')
			idx = append(idx, i)
			lineStart = true
		default:
			if pendingSpace >= 0 {
				b.WriteByte(' ')
				idx = append(idx, pendingSpace)
				pendingSpace = -1
			}
			b.WriteByte(c)
			idx = append(idx, i)
			lineStart = false
		}
	}
	return b.String(), idx
}

func leadingWS(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[:i]
}

func firstNonBlankLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// indentMap pairs the indentation of each line of old with that of the
// line of the matched region it matched, where that pairing is consistent.
func indentMap(region, old string) map[string]string {
	fileLines := strings.Split(strings.ReplaceAll(region, "\r\n", "\n"), "\n")
	oldLines := strings.Split(strings.Trim(strings.ReplaceAll(old, "\r\n", "\n"), "\n"), "\n")
	if len(fileLines) != len(oldLines) {
		return nil
	}
	m := map[string]string{}
	bad := map[string]bool{}
	for i := range oldLines {
		if strings.TrimSpace(oldLines[i]) == "" {
			continue
		}
		o, f := leadingWS(oldLines[i]), leadingWS(fileLines[i])
		if prev, ok := m[o]; ok && prev != f {
			bad[o] = true
		}
		m[o] = f
	}
	for o := range bad {
		delete(m, o)
	}
	return m
}

// reindent re-indents the non-blank lines of s: an indentation found in m
// is replaced by its pair; otherwise a line starting with from gets to
// instead.
func reindent(s string, m map[string]string, from, to string) string {
	lines := strings.SplitAfter(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if f, ok := m[leadingWS(l)]; ok {
			lines[i] = f + l[len(leadingWS(l)):]
			continue
		}
		if strings.HasPrefix(l, from) {
			lines[i] = to + l[len(from):]
		}
	}
	return strings.Join(lines, "")
}

// lineOf is the 1-based line number of byte offset off.
func lineOf(s string, off int) int {
	if off > len(s) {
		off = len(s)
	}
	return strings.Count(s[:off], "\n") + 1
}

// matchLines lists the lines where sub starts in s, at most max of them.
func matchLines(s, sub string, max int) string {
	var out []string
	for off := 0; len(out) < max; {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			break
		}
		out = append(out, fmt.Sprint(lineOf(s, off+i)))
		off += i + len(sub)
	}
	return strings.Join(out, ", ")
}

// notFound builds the failure for text that matched nowhere, showing the
// closest lines of the file.
func notFound(content, old string) error {
	msg := "old_string was not found in the file, not even when ignoring whitespace. Nothing was changed."
	if start, end, score := closestLines(content, old); end > start {
		lines := strings.Split(content, "\n")
		var b strings.Builder
		fmt.Fprintf(&b, "%s The closest text is at lines %d-%d (%.0f%% similar):\n", msg, start+1, end, score*100)
		for i := start; i < end; i++ {
			writeNumbered(&b, i+1, strings.TrimSuffix(lines[i], "\r"), maxLineChars)
		}
		b.WriteString("Read the file again and copy old_string exactly from it.")
		return &editFailure{failNotFound, b.String()}
	}
	return &editFailure{failNotFound, msg + " Read the file again and copy old_string exactly from it."}
}

// closestLines finds the window of lines in content most similar to old,
// returned as a half-open 0-based line range and a similarity in [0,1]. It
// returns end == start when nothing is similar enough to help.
func closestLines(content, old string) (start, end int, score float64) {
	fileLines := strings.Split(content, "\n")
	oldLines := strings.Split(strings.Trim(strings.ReplaceAll(old, "\r\n", "\n"), "\n"), "\n")
	k := len(oldLines)
	if k == 0 || len(fileLines) == 0 {
		return 0, 0, 0
	}
	if k > len(fileLines) {
		k = len(fileLines)
		oldLines = oldLines[:k]
	}
	fileGrams := make([][]uint32, len(fileLines))
	gramsOf := func(i int) []uint32 {
		if fileGrams[i] == nil {
			fileGrams[i] = bigrams(fileLines[i])
		}
		return fileGrams[i]
	}
	oldGrams := make([][]uint32, k)
	for j := range oldLines {
		oldGrams[j] = bigrams(oldLines[j])
	}
	starts := make([]int, 0, len(fileLines))
	for i := 0; i+k <= len(fileLines); i++ {
		starts = append(starts, i)
	}
	// Bound the work on big files: only windows whose first line resembles
	// old's first line are scored in full.
	const budget = 300_000
	if len(starts)*k > budget {
		first := make([]float64, len(starts))
		for _, i := range starts {
			first[i] = dice(gramsOf(i), oldGrams[0])
		}
		sort.SliceStable(starts, func(a, b int) bool { return first[starts[a]] > first[starts[b]] })
		starts = starts[:max(1, budget/k)]
	}
	best, bestAt := -1.0, 0
	for _, i := range starts {
		sum := 0.0
		for j := 0; j < k; j++ {
			sum += dice(gramsOf(i+j), oldGrams[j])
		}
		if s := sum / float64(k); s > best {
			best, bestAt = s, i
		}
	}
	if best < 0.3 {
		return 0, 0, best
	}
	return bestAt, bestAt + k, best
}

// bigrams returns the sorted character bigrams of a whitespace-normalized
// line.
func bigrams(line string) []uint32 {
	n, _ := normalizeWS(line)
	if len(n) < 2 {
		if n == "" {
			return []uint32{}
		}
		return []uint32{uint32(n[0])}
	}
	g := make([]uint32, 0, len(n)-1)
	for i := 0; i+1 < len(n); i++ {
		g = append(g, uint32(n[i])<<8|uint32(n[i+1]))
	}
	sort.Slice(g, func(a, b int) bool { return g[a] < g[b] })
	return g
}

// dice is the Sørensen–Dice coefficient of two sorted bigram multisets.
func dice(a, b []uint32) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}

// editSpec is one edit of a MultiEdit call.
type editSpec struct {
	Old, New   string
	ReplaceAll bool
}

// applyEdits applies edits in order to content, all or nothing. A failure
// names the edit (1-based) that failed; no partial result is returned.
func applyEdits(content string, edits []editSpec) (string, []editOutcome, error) {
	outs := make([]editOutcome, 0, len(edits))
	for i, e := range edits {
		o, err := applyEdit(content, e.Old, e.New, e.ReplaceAll)
		if err != nil {
			f := err.(*editFailure)
			return "", nil, &editFailure{f.kind, fmt.Sprintf("Edit %d of %d failed, so none were applied: %s", i+1, len(edits), f.msg)}
		}
		content = o.content
		outs = append(outs, o)
	}
	return content, outs, nil
}
