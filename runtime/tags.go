package runtime

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Tags are string keys and values a run is given when triggered
// (WithTags, WithTag): who or what it is for ("customer": "acme"), where
// it came from ("channel": "web"). The runs its steps start (map items,
// child workflow runs) carry them too. Operators filter runs by them
// (trellis runs list -tag, a where filter's tags, the dashboard), bulk
// actions select by them, and traces carry them (see
// docs/concepts/tags.md). A run's tags never change once it is created.
//
// A key is 1 to MaxTagKeyBytes bytes of lower-case ASCII letters, digits,
// '_', '.' and '-'; a value is at most MaxTagValueBytes bytes of UTF-8
// without NUL, and may be empty. A run has at most MaxTags tags, of at
// most MaxTagsBytes bytes in all (keys and values). A trigger with a tag
// outside these bounds is refused, writing nothing, with an error
// matching ErrInvalidTag that names the tag.
const (
	MaxTags          = 16
	MaxTagKeyBytes   = 64
	MaxTagValueBytes = 256
	MaxTagsBytes     = 2048
)

// ErrInvalidTag is matched by the error of a trigger whose tags are out
// of bounds (see MaxTags).
var ErrInvalidTag = errors.New("invalid tag")

// WithTags gives the runs triggered these tags (see MaxTags), with any
// given by an earlier WithTags or WithTag; a key given twice keeps the
// later value. Under an idempotency key, a trigger that finds the run of
// an earlier trigger returns it as it is: the first trigger's tags win.
func WithTags(tags map[string]string) RunOption {
	tags = maps.Clone(tags)
	return func(o *RunOptions) {
		if o.Tags == nil {
			o.Tags = make(map[string]string, len(tags))
		}
		maps.Copy(o.Tags, tags)
	}
}

// WithTag gives the runs triggered the tag key=value, as WithTags does.
func WithTag(key, value string) RunOption {
	return WithTags(map[string]string{key: value})
}

// CheckTags reports tags a trigger refuses (see MaxTags), naming each
// tag out of bounds; nil when all are within them. The error matches
// ErrInvalidTag.
func CheckTags(tags map[string]string) error {
	var errs []error
	if len(tags) > MaxTags {
		errs = append(errs, fmt.Errorf("%d tags, over the limit of %d (runtime.MaxTags)", len(tags), MaxTags))
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		v := tags[k]
		total += len(k) + len(v)
		if err := CheckTagKey(k); err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case len(v) > MaxTagValueBytes:
			errs = append(errs, fmt.Errorf("tag %s: the value is %d bytes, over the limit of %d (runtime.MaxTagValueBytes)", k, len(v), MaxTagValueBytes))
		case !utf8.ValidString(v):
			errs = append(errs, fmt.Errorf("tag %s: the value is not valid UTF-8", k))
		case strings.IndexByte(v, 0) >= 0:
			errs = append(errs, fmt.Errorf("tag %s: the value contains a NUL byte", k))
		}
	}
	if total > MaxTagsBytes {
		errs = append(errs, fmt.Errorf("the tags are %d bytes in all, over the limit of %d (runtime.MaxTagsBytes)", total, MaxTagsBytes))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidTag, errors.Join(errs...))
}

// CheckTagKey reports a tag key a trigger refuses: empty, longer than
// MaxTagKeyBytes, or with a byte other than a-z, 0-9, '_', '.' and '-'.
// The key is quoted, shortened when long.
func CheckTagKey(k string) error {
	switch {
	case k == "":
		return errors.New("a tag key is empty: give it 1 to 64 of a-z, 0-9, '_', '.', '-'")
	case len(k) > MaxTagKeyBytes:
		return fmt.Errorf("tag key %q is %d bytes, over the limit of %d (runtime.MaxTagKeyBytes)", clip(k), len(k), MaxTagKeyBytes)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("tag key %q has %q at byte %d: a key is made of a-z, 0-9, '_', '.', '-'", clip(k), string(rune(c)), i)
		}
	}
	return nil
}
