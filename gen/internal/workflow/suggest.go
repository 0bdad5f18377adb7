package workflow

import (
	"strings"
	"unicode"

	"github.com/effectivelabs/trellis/schema/spec"
)

// suggestName turns an invalid name into a valid one when that is
// obvious (OrderProcessing and order_processing become order-processing),
// or returns "".
func suggestName(name string) string {
	var b strings.Builder
	runes := []rune(name)
	for i, r := range runes {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			if i > 0 && (unicode.IsLower(runes[i-1]) || unicode.IsDigit(runes[i-1])) {
				b.WriteByte('-')
			}
			b.WriteRune(unicode.ToLower(r))
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	for strings.Contains(s, "--") {
		s = strings.ReplaceAll(s, "--", "-")
	}
	s = strings.Trim(s, "-")
	if !validName(s) || s == name {
		return ""
	}
	return s
}

// validName reports whether name is a valid workflow or step name:
// see spec.CheckName.
func validName(name string) bool { return spec.CheckName(name) == nil }
