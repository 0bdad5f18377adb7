package store

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// MinRunIDPrefix is the fewest hex digits a RunIDPrefix has. Run ids
// made by the engine are UUIDv7: their first 12 digits are the
// millisecond they were made, so 8 digits already span 65 seconds of
// runs, 6 digits four hours and 4 digits 49 days. A shorter prefix would
// name no run in a store of any size, and would select so many that
// Postgres would read them in creation order, as deep into the history
// as the prefix goes, rather than through the index on run ids.
const MinRunIDPrefix = 8

// RunIDPrefix is the start of a run id, as a person types it to name a run
// without copying all of it: what RunQuery.IDPrefix selects runs by. The
// zero value is no prefix (every run). ParseRunIDPrefix makes one.
type RunIDPrefix struct {
	digits string // lowercase hex, no dashes; at most 32
}

// ErrRunIDPrefix is what ParseRunIDPrefix refuses: text that is not the
// start of a run id.
var ErrRunIDPrefix = errors.New("not a run id or the start of one")

// ParseRunIDPrefix reads the start of a run id: at least MinRunIDPrefix
// hex digits, in any case, with or without the dashes of a run id where
// it has them (0190a0b4-7c2e or 0190a0b47c2e). A whole run id is a prefix
// of itself. An error wraps ErrRunIDPrefix and says what is wrong without
// quoting the text, which may be long or hostile.
func ParseRunIDPrefix(s string) (RunIDPrefix, error) {
	const canonical = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
	if len(s) > len(canonical) {
		return RunIDPrefix{}, fmt.Errorf("%w: longer than a run id", ErrRunIDPrefix)
	}
	var b strings.Builder
	dashes := strings.Contains(s, "-")
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '-':
			if canonical[i] != '-' {
				return RunIDPrefix{}, fmt.Errorf("%w: a dash at character %d, where a run id has a hex digit", ErrRunIDPrefix, i+1)
			}
			continue
		case dashes && canonical[i] == '-':
			return RunIDPrefix{}, fmt.Errorf("%w: character %d should be a dash, as in 0190a0b4-7c2e-7d1a-9f3b-4c5d6e7f8a9b", ErrRunIDPrefix, i+1)
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			c += 'a' - 'A'
		default:
			return RunIDPrefix{}, fmt.Errorf("%w: character %d is not a hex digit (0-9, a-f)", ErrRunIDPrefix, i+1)
		}
		b.WriteByte(c)
	}
	if !dashes && len(s) > 32 {
		return RunIDPrefix{}, fmt.Errorf("%w: longer than a run id", ErrRunIDPrefix)
	}
	if b.Len() < MinRunIDPrefix {
		return RunIDPrefix{}, fmt.Errorf("%w: give at least %d hex digits of the id", ErrRunIDPrefix, MinRunIDPrefix)
	}
	return RunIDPrefix{digits: b.String()}, nil
}

// IsZero reports whether p is no prefix at all (it selects every run).
func (p RunIDPrefix) IsZero() bool { return p.digits == "" }

// String returns the prefix's hex digits, lowercase, without dashes.
func (p RunIDPrefix) String() string { return p.digits }

// Range returns the smallest and the largest run ids that begin with p,
// bytewise, as Postgres orders uuids: the run ids with the prefix are
// those from lo to hi, both included, so that an index on run ids finds
// them. For the zero prefix, every id.
func (p RunIDPrefix) Range() (lo, hi uuid.UUID) {
	lo, _ = uuid.FromBytes(mustHex(p.digits + strings.Repeat("0", 32-len(p.digits))))
	hi, _ = uuid.FromBytes(mustHex(p.digits + strings.Repeat("f", 32-len(p.digits))))
	return lo, hi
}

// Matches reports whether id begins with p.
func (p RunIDPrefix) Matches(id uuid.UUID) bool {
	return strings.HasPrefix(hex.EncodeToString(id[:]), p.digits)
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic("store: a run id prefix holds other than hex digits: " + err.Error())
	}
	return b
}
