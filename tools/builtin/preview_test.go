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
