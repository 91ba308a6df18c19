package builtin

import (
	"github.com/agentbox/agentbox/tools"
)

var (
	_ tools.ContentPreview = (*WriteParams)(nil)
	_ tools.ContentPreview = (*EditParams)(nil)
	_ tools.ContentPreview = (*MultiEditParams)(nil)
)

// NewContent implements tools.ContentPreview: a Write leaves its content.
func (p *WriteParams) NewContent(old []byte) ([]byte, bool) { return []byte(p.Content), true }

// NewContent implements tools.ContentPreview: what the Edit tool would
// write given old (nil: absent), computed by the same applyEdits.
func (p *EditParams) NewContent(old []byte) ([]byte, bool) {
	return previewEdits(old, []editSpec{{p.OldString, p.NewString, p.ReplaceAll}})
}

// NewContent implements tools.ContentPreview for every edit in order.
func (p *MultiEditParams) NewContent(old []byte) ([]byte, bool) {
	specs := make([]editSpec, len(p.Edits))
	for i, e := range p.Edits {
		specs[i] = editSpec{e.OldString, e.NewString, e.ReplaceAll}
	}
	return previewEdits(old, specs)
}

// previewEdits is editFile's in-memory step: an absent file takes only an
// edit whose first old_string is empty (it creates the file); false when
// the tool would fail.
func previewEdits(old []byte, edits []editSpec) ([]byte, bool) {
	if old == nil && (len(edits) == 0 || edits[0].Old != "") {
		return nil, false
	}
	content, _, err := applyEdits(string(old), edits)
	if err != nil {
		return nil, false
	}
	return []byte(content), true
}
