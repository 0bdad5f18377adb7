// Package suggest guesses what a misspelt word meant, for the "did you
// mean" hints of the workflow compiler (YAML keys, step and event names),
// the trellis command (commands, subcommands, flags) and run filters (CEL
// fields and variables). One guesser, so that every hint agrees.
package suggest

import "strings"

// Closest returns the candidate a misspelt word most likely meant, or ""
// when none is close: same letters in another case, or an edit distance
// (with transpositions) of at most a third of the word's length.
func Closest(word string, candidates []string) string {
	best, bestDist := "", len(word)/3+1
	if bestDist < 2 {
		bestDist = 2
	}
	for _, c := range candidates {
		if strings.EqualFold(c, word) {
			return c
		}
		if d := editDistance(strings.ToLower(word), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" {
		return best
	}
	// A word cut short or inflected (maxRetry for maxRetries) shares all
	// but its last few characters with what it meant.
	for _, c := range candidates {
		n := commonPrefix(strings.ToLower(word), strings.ToLower(c))
		if n >= 4 && n >= min(len(word), len(c))-2 {
			if best != "" {
				return "" // ambiguous
			}
			best = c
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of adjacent characters cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
