package suggest

import "testing"

func TestClosest(t *testing.T) {
	keys := []string{"name", "parents", "skipIf", "maxRetries", "maxDelay"}
	tests := map[string]string{
		"nmae":   "name", //nolint:misspell // a typo to correct
		"parent": "parents", "skipif": "skipIf", "maxRetry": "maxRetries",
		"color": "", "max": "",
	}
	for word, want := range tests {
		if got := Closest(word, keys); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}
