package builtin

import (
	"bytes"
	"strings"

	"github.com/agentbox/agentbox/tools"
)

var (
	_ tools.ContentPreview = (*WriteParams)(nil)
	_ tools.ContentPreview = (*EditParams)(nil)
	_ tools.ContentPreview = (*MultiEditParams)(nil)
)

// NewContent implements tools.ContentPreview: a Write leaves its content.
func (p *WriteParams) NewContent(old []byte) ([]byte, bool) { return []byte(p.Content), true }

// NewContent implements tools.ContentPreview: the edit applied exactly
// (an old_string found once, or every time with replace_all; plain
// newlines count as CRLF in a CRLF file). A match the tool would find
// only with whitespace ignored is not known here.
func (p *EditParams) NewContent(old []byte) ([]byte, bool) {
	return applyExact(old, []EditOp{{OldString: p.OldString, NewString: p.NewString, ReplaceAll: p.ReplaceAll}})
}

// NewContent implements tools.ContentPreview for every edit in order.
func (p *MultiEditParams) NewContent(old []byte) ([]byte, bool) { return applyExact(old, p.Edits) }

func applyExact(old []byte, edits []EditOp) ([]byte, bool) {
	if old == nil {
		return nil, false
	}
	s := string(old)
	crlf := bytes.Contains(old, []byte("\r\n"))
	for _, e := range edits {
		from, to := e.OldString, e.NewString
		if crlf && !strings.Contains(from, "\r\n") {
			from = strings.ReplaceAll(from, "\n", "\r\n")
			to = strings.ReplaceAll(to, "\n", "\r\n")
		}
		switch n := strings.Count(s, from); {
		case from == "" || n == 0:
			return nil, false
		case e.ReplaceAll:
			s = strings.ReplaceAll(s, from, to)
		case n == 1:
			s = strings.Replace(s, from, to, 1)
		default:
			return nil, false
		}
	}
	return []byte(s), true
}
