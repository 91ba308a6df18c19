package tools

import (
	"io"
	"log/slog"
	"reflect"
	"testing"
)

func reflectTypeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

func decodeRune(s string) (rune, int, bool) {
	for i, r := range s {
		if i == 0 {
			if r == 0xFFFD {
				return r, 1, false
			}
			return r, len(string(r)), true
		}
	}
	return 0, 0, false
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// must stops the test when a fixture cannot be made.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
