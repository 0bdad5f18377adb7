package spec

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Labels route steps to workers. A worker declares labels, key=value pairs
// such as gpu=a100 or region=eu-west-1; a step's RunsOn names the labels a
// worker must have, every one of them with the same value, to run it.
// The rules below hold for both, so that every label a step can require
// can be declared, and the stored form ("key=value", sorted) is
// unambiguous: neither keys nor values hold '=' or ','.
const (
	// MaxStepLabels bounds the labels one step requires.
	MaxStepLabels = 16
	// MaxWorkerLabels bounds the labels one worker declares.
	MaxWorkerLabels = 64
	// MaxLabelKey and MaxLabelValue bound a key and a value, in bytes.
	MaxLabelKey   = 63
	MaxLabelValue = 63
)

// labelRule and valueRule are how a label key and value are spelt, for
// messages.
const (
	labelKeyRule   = "use letters, digits, '.', '_', '-' and '/', starting and ending with a letter or digit, at most 63 characters"
	labelValueRule = "use letters, digits, '.', '_' and '-', starting and ending with a letter or digit, at most 63 characters"
)

// CheckLabel checks one label, key and value, and says what is wrong and
// how to fix it.
func CheckLabel(key, value string) error {
	if err := checkLabelPart(key, "/", MaxLabelKey); err != "" {
		return fmt.Errorf("label key %s: %s", quoteBounded(key), err+": "+labelKeyRule)
	}
	if err := checkLabelPart(value, "", MaxLabelValue); err != "" {
		return fmt.Errorf("value %s of label %s: %s", quoteBounded(value), key, err+": "+labelValueRule)
	}
	return nil
}

// CheckLabelKey checks a label key alone.
func CheckLabelKey(key string) error {
	if err := checkLabelPart(key, "/", MaxLabelKey); err != "" {
		return fmt.Errorf("label key %s: %s", quoteBounded(key), err+": "+labelKeyRule)
	}
	return nil
}

// CheckLabelValue checks a label value alone.
func CheckLabelValue(value string) error {
	if err := checkLabelPart(value, "", MaxLabelValue); err != "" {
		return fmt.Errorf("label value %s: %s", quoteBounded(value), err+": "+labelValueRule)
	}
	return nil
}

// CheckLabels checks a set of labels, at most max of them, and returns a
// message for each problem, in key order.
func CheckLabels(labels map[string]string, max int) []string {
	var out []string
	if len(labels) > max {
		out = append(out, fmt.Sprintf("%d labels, more than the %d allowed", len(labels), max))
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := CheckLabel(k, labels[k]); err != nil {
			out = append(out, err.Error())
		}
		if len(out) >= 10 {
			break // enough to fix; a hostile map may hold thousands
		}
	}
	return out
}

// LabelList returns labels in their stored form: "key=value" strings,
// sorted; nil for none.
func LabelList(labels map[string]string) []string {
	if len(labels) == 0 {
		return nil
	}
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// LabelsInclude reports whether have (stored form, as LabelList returns)
// holds every label of want (likewise).
func LabelsInclude(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func checkLabelPart(s, extra string, limit int) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > limit:
		return fmt.Sprintf("is %d bytes long, more than %d", len(s), limit)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum {
			continue
		}
		if i == 0 || i == len(s)-1 {
			return "must start and end with a letter or digit"
		}
		if !strings.ContainsRune("._-"+extra, rune(c)) {
			return fmt.Sprintf("has %q at byte %d", s[i:i+1], i)
		}
	}
	return ""
}

// quoteBounded quotes s, cut to a readable length.
func quoteBounded(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q...", s[:80])
	}
	return fmt.Sprintf("%q", s)
}
