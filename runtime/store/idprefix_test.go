package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/effectivelabs/trellis/runtime/store"
)

func TestParseRunIDPrefix(t *testing.T) {
	id := uuid.MustParse("0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b")
	for _, s := range []string{
		"0190a0b4", "0190A0B4-7C2E", "0190a0b4-", "0190a0b47c2e7d1a",
		"0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b", "0190A0B47C2E7D1A9F3B4C5D6E7F8A9B",
	} {
		p, err := store.ParseRunIDPrefix(s)
		if err != nil {
			t.Errorf("ParseRunIDPrefix(%q): %v", s, err)
			continue
		}
		if !p.Matches(id) {
			t.Errorf("ParseRunIDPrefix(%q) = %s does not match %s", s, p, id)
		}
		if lo, hi := p.Range(); strings.Compare(lo.String(), id.String()) > 0 || strings.Compare(id.String(), hi.String()) > 0 {
			t.Errorf("ParseRunIDPrefix(%q).Range() = %s, %s leaves out %s", s, lo, hi, id)
		}
	}
	for _, s := range []string{
		"", "019", "0190a0b", "0190-a0b4", "%", "_", "01%", "0190_", "abcdefg", "abcdefgh", "0190 a0b4", "01-90a0b4", "0190a0b47c2e-7d1a",
		"0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b0", "0190a0b47c2e7d1a9f3b4c5d6e7f8a9b0",
		strings.Repeat("a", 10_000), "0190\x00", "0190\xff", "０１９０", "{0190a0b4}",
	} {
		if p, err := store.ParseRunIDPrefix(s); err == nil || !errors.Is(err, store.ErrRunIDPrefix) {
			t.Errorf("ParseRunIDPrefix(%.40q) = %q, %v; want ErrRunIDPrefix", s, p, err)
		} else if len(err.Error()) > 200 {
			t.Errorf("ParseRunIDPrefix(%.40q): the error quotes the input: %.200s", s, err)
		}
	}
}

func TestRunIDPrefixRange(t *testing.T) {
	p, err := store.ParseRunIDPrefix("ABCD0123-4")
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := p.Range()
	if lo.String() != "abcd0123-4000-0000-0000-000000000000" || hi.String() != "abcd0123-4fff-ffff-ffff-ffffffffffff" {
		t.Errorf("Range() = %s, %s", lo, hi)
	}
	if p.Matches(uuid.MustParse("abcd0123-5000-0000-0000-000000000000")) {
		t.Errorf("abcd0123-4 matches abcd0123-5000-...")
	}
	if !(store.RunIDPrefix{}).IsZero() || p.IsZero() {
		t.Errorf("IsZero is wrong")
	}
}
