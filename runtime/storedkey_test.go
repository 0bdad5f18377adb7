package runtime

import (
	"strings"
	"testing"
)

// TestStoredKey pins the rule every engine must share: a change to it
// would split keys between engines of different versions, and between
// the waiters and the senders of keyed events.
func TestStoredKey(t *testing.T) {
	for _, c := range []struct{ what, value, want string }{
		{"empty", "", ""},
		{"short", "acme", "acme"},
		{"128 bytes", strings.Repeat("x", 128), strings.Repeat("x", 128)},
		{"129 bytes", strings.Repeat("x", 129), "sha256:0ec9eb33e74510bcdd1f2ea55206e82f21649c5c2becbf2b433eb475b34c01bd"},
		{"NUL", "a\x00b", "sha256:59b271ae1bbcb1d31d41929817f4b16fb439eb4f31520b5ad1d5ce98920a7138"},
		{"not UTF-8", "a\xffb", "sha256:"},
		{"looks like a digest", "sha256:abc", "sha256:"},
	} {
		got := storedKey(c.value)
		if got != c.want && !(strings.HasSuffix(c.want, ":") && strings.HasPrefix(got, c.want) && len(got) == 71) {
			t.Errorf("%s: storedKey = %q, want %q", c.what, got, c.want)
		}
	}
}
