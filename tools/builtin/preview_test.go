package builtin

import "testing"

func TestNewContent(t *testing.T) {
	old := []byte("{\r\n  \"a\": 1,\r\n  \"b\": 1\r\n}\r\n")
	tests := []struct {
		name string
		p    interface{ NewContent([]byte) ([]byte, bool) }
		want string
		ok   bool
	}{
		{"write", &WriteParams{Content: "x"}, "x", true},
		{"edit once, CRLF kept", &EditParams{OldString: "\"a\": 1,\n", NewString: "\"a\": 2,\n"}, "{\r\n  \"a\": 2,\r\n  \"b\": 1\r\n}\r\n", true},
		{"ambiguous", &EditParams{OldString: "1", NewString: "2"}, "", false},
		{"replace all", &EditParams{OldString: "1", NewString: "2", ReplaceAll: true}, "{\r\n  \"a\": 2,\r\n  \"b\": 2\r\n}\r\n", true},
		{"not found", &EditParams{OldString: "zzz", NewString: "2"}, "", false},
		{"multi in order", &MultiEditParams{Edits: []EditOp{{OldString: "\"a\"", NewString: "\"c\""}, {OldString: "\"c\": 1", NewString: "\"c\": 3"}}}, "{\r\n  \"c\": 3,\r\n  \"b\": 1\r\n}\r\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.p.NewContent(old)
			if ok != tt.ok || ok && string(got) != tt.want {
				t.Fatalf("got %q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestNewContentIsWhatTheToolWrites: the preview is the Edit tool's own
// result, also where a copy of its rules would differ (a file with a few
// CRLF line endings, a match found only with whitespace ignored, a file
// an empty old_string creates).
func TestNewContentIsWhatTheToolWrites(t *testing.T) {
	tests := []struct {
		name string
		old  []byte
		p    interface{ NewContent([]byte) ([]byte, bool) }
		want string
		ok   bool
	}{
		{"mostly LF with one CRLF", []byte("x\r\ny\nz\nw\n"), &EditParams{OldString: "y\nz", NewString: "Y\nZ"}, "x\r\nY\nZ\nw\n", true},
		{"whitespace ignored", []byte("if  a {\n\tb()\n}\n"), &EditParams{OldString: "if a {\n  b()\n}", NewString: "if a {\n  c()\n}"}, "", true},
		{"created", nil, &EditParams{OldString: "", NewString: "new"}, "new", true},
		{"absent", nil, &EditParams{OldString: "a", NewString: "b"}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.p.NewContent(tt.old)
			if tt.want == "" && ok {
				// Computed by the tool's edit core: the preview must
				// agree with it, whatever it is.
				want, _, err := applyEdits(string(tt.old), []editSpec{{tt.p.(*EditParams).OldString, tt.p.(*EditParams).NewString, false}})
				if err != nil {
					t.Fatal(err)
				}
				tt.want = want
			}
			if ok != tt.ok || ok && string(got) != tt.want {
				t.Fatalf("got %q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}
