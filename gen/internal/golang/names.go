package golang

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// isInitialism reports whether an upper-case word is one Go spells in
// capitals (ID, URL, HTTP ...), following the Go code review comments.
func isInitialism(upper string) bool {
	switch upper {
	case "ACL", "API", "ASCII", "CPU", "CSS", "CSV", "DNS", "EOF", "GUID", "HTML", "HTTP", "HTTPS",
		"ID", "IP", "JSON", "JWT", "LHS", "PDF", "QPS", "RAM", "RHS", "RPC", "SKU", "SLA", "SMS", "SMTP",
		"SQL", "SSH", "TCP", "TLS", "TTL", "UDP", "UI", "UID", "UUID", "URI", "URL", "UTF8", "VM",
		"XML", "XMPP", "XSRF", "XSS":
		return true
	}
	return false
}

// words splits a name into words: at every character that is not a letter
// or digit, and at case changes (orderId -> order, Id; HTTPServer -> HTTP,
// Server). A plural initialism (IDs, URLs) stays one word.
func words(s string) []string {
	var out []string
	for _, part := range strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		r := []rune(part)
		start := 0
		for i := 1; i < len(r); i++ {
			if !unicode.IsUpper(r[i]) {
				continue
			}
			prev := r[i-1]
			lowerBefore := unicode.IsLower(prev) || unicode.IsDigit(prev)
			acronymEnd := unicode.IsUpper(prev) && i+1 < len(r) && unicode.IsLower(r[i+1]) && !pluralAt(r, i+1)
			if lowerBefore || acronymEnd {
				out = append(out, string(r[start:i]))
				start = i
			}
		}
		out = append(out, string(r[start:]))
	}
	return out
}

// pluralAt reports whether r[i] is the 's' of a plural acronym such as IDs:
// a lone lower-case s ending the word.
func pluralAt(r []rune, i int) bool {
	return r[i] == 's' && (i+1 == len(r) || !unicode.IsLower(r[i+1]))
}

// goName turns a name from a workflow file (a step, a property, an enum
// value) into the words of a Go identifier: order-processing ->
// OrderProcessing, orderId -> OrderID, EXPRESS_SHIPPING ->
// ExpressShipping. It returns "" for a name without letters or digits.
// The result may start with a digit; callers that need an identifier on
// its own use fieldName.
func goName(s string) string {
	ws := words(s)
	shouting := strings.ToUpper(s) == s && len(ws) > 1
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(goWord(w, shouting))
	}
	return b.String()
}

func goWord(w string, shouting bool) string {
	upper := strings.ToUpper(w)
	if isInitialism(upper) {
		return upper
	}
	if len(w) > 2 && (w[len(w)-1] == 's') && isInitialism(upper[:len(upper)-1]) {
		return upper[:len(upper)-1] + "s"
	}
	if shouting || upper == w && utf8.RuneCountInString(w) > 1 && isShoutingWord(w) {
		w = strings.ToLower(w)
	}
	r, size := utf8.DecodeRuneInString(w)
	return string(unicode.ToUpper(r)) + w[size:]
}

// isShoutingWord reports whether an all-capitals word is not an acronym
// Go would keep: we only lower-case it when it is long enough to be a
// word (EXPRESS), keeping short runs (SKU-like codes) as written.
func isShoutingWord(w string) bool { return utf8.RuneCountInString(w) > 4 }

// fieldName is goName made a valid exported identifier on its own: names
// that do not start with an upper-case letter get an X in front.
func fieldName(s string) string {
	n := goName(s)
	if n == "" {
		return ""
	}
	if r, _ := utf8.DecodeRuneInString(n); !unicode.IsUpper(r) {
		n = "X" + n
	}
	return n
}

// unexported lower-cases the leading word of an exported identifier:
// OrderProcessing -> orderProcessing, APISync -> apiSync.
func unexported(name string) string {
	r := []rune(name)
	n := 0
	for n < len(r) && unicode.IsUpper(r[n]) {
		n++
	}
	switch {
	case n == 0:
		return name
	case n > 1 && n < len(r) && unicode.IsLower(r[n]):
		n-- // APISync: keep the S of Sync
	}
	for i := 0; i < n; i++ {
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

// validTagName reports whether encoding/json accepts name as a struct tag
// name. It ignores tags with other characters and would silently use the
// Go field name instead, so such properties cannot be mapped.
func validTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
