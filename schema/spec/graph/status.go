package graph

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// colours are how a status is drawn.
type colours struct {
	fill, stroke string
}

// statusKey turns a status into the key of its colours and of its Mermaid
// class: lowercase, with anything but ASCII letters and digits replaced by
// '_'. "" stays "", meaning no status.
func statusKey(status string) string {
	if status == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range strings.ToLower(status) {
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// statusColours are the colours of a status key: one pair per task status
// of the engine, grey for anything else. The fills are light, so that the
// black label text stays readable on light and dark pages.
func statusColours(key string) colours {
	switch key {
	case "pending":
		return colours{"#f1f3f5", "#868e96"}
	case "queued":
		return colours{"#e7f5ff", "#74c0fc"}
	case "running":
		return colours{"#a5d8ff", "#1971c2"}
	case "sleeping":
		return colours{"#e5dbff", "#7048e8"}
	case "waiting":
		return colours{"#c3fae8", "#0ca678"}
	case "retrying":
		return colours{"#ffec99", "#f08c00"}
	case "completed":
		return colours{"#b2f2bb", "#2f9e44"}
	case "skipped":
		return colours{"#f8f9fa", "#ced4da"}
	case "failed":
		return colours{"#ffc9c9", "#e03131"}
	case "cancelled":
		return colours{"#dee2e6", "#495057"}
	}
	return colours{"#e9ecef", "#868e96"}
}
