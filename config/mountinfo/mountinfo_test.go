package mountinfo

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Entry
		err  error
	}{
		{
			name: "optional fields and escapes",
			in: "22 1 8:1 / / rw,relatime shared:1 master:2 - ext4 /dev/vda rw\n" +
				"40 22 0:33 / /work/my\\040dir ro,nosuid - tmpfs tmp\\134fs rw,size=64k\n",
			want: []Entry{
				{Target: "/", Options: []string{"rw", "relatime"}, FSType: "ext4", Source: "/dev/vda"},
				{Target: "/work/my dir", Options: []string{"ro", "nosuid"}, FSType: "tmpfs", Source: `tmp\fs`},
			},
		},
		{name: "empty", in: ""},
		{name: "no separator", in: "22 1 8:1 / / rw,relatime shared:1 ext4 /dev/vda rw\n", err: ErrMalformed},
		{name: "nothing after the separator", in: "22 1 8:1 / / rw - ext4\n", err: ErrMalformed},
		{name: "too short", in: "22 1 8:1 / /\n", err: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if tt.err == nil && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:         "/plain",
		`/a\040b`:        "/a b",
		`/tab\011nl\012`: "/tab\tnl\n",
		`/back\134slash`: `/back\slash`,
		`/not\09octal`:   `/not\09octal`,
		`/short\04`:      `/short\04`,
		`/end\`:          `/end\`,
	} {
		if got := Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse: any input parses or is refused with ErrMalformed (or a
// scanner error for an overlong line), without a panic; an accepted line
// yields an entry with a mount point, a type and a source.
func FuzzParse(f *testing.F) {
	f.Add("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n")
	f.Add("40 22 0:33 / /a\\040b ro - tmpfs t\\134 rw\n")
	f.Add("1 2 3 4 5 6 -\n")
	f.Fuzz(func(t *testing.T, in string) {
		es, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Target == "" || e.FSType == "" || e.Source == "" {
				t.Fatalf("accepted an entry with an empty field: %#v from %q", e, in)
			}
		}
	})
}
