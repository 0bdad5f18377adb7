package runtime

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// SizeLimits bound what users and steps hand the engine: run inputs, step
// outputs, event payloads, the lists map steps fan out over, and the
// tenants and idempotency keys that name runs. They are not the
// concurrency and rate limits workflows declare. Something over a limit is
// refused where it enters, with a *LimitError naming what and which limit
// and never quoting the value: a trigger, a Send or Signal, or a
// CreateSchedule writes nothing; a step's output fails its attempt at
// once, without retries, as an output that does not match its schema
// does; a map step over MaxMapItems fails, starting no item.
//
// A zero field takes its default; a negative one is an error of New. The
// limits are the engine's own, checked where it takes the value in: an
// engine with larger limits than another may start runs the other would
// have refused, which that one then runs all the same (it does not check
// inputs again).
type SizeLimits struct {
	// MaxInputBytes bounds a run's input, as JSON (default 1 MiB): at
	// trigger, for a schedule's input when it is created, and for the
	// input of a child workflow's run (whose step then fails).
	MaxInputBytes int
	// MaxOutputBytes bounds what a step's code returns, as JSON (default
	// 1 MiB).
	MaxOutputBytes int
	// MaxEventBytes bounds an event's payload, as JSON (default 1 MiB).
	MaxEventBytes int
	// MaxDepth bounds how deeply objects and arrays nest in inputs,
	// outputs and payloads (default 64; {"a":[1]} is 2 deep).
	MaxDepth int
	// MaxMapItems bounds the items of one map step's forEach (default
	// 10,000): all its item runs are created in one transaction.
	MaxMapItems int
	// MaxTenantBytes bounds a tenant's name (default 255, at most 1024:
	// the store indexes it). Tenants must also be valid UTF-8 without NUL.
	MaxTenantBytes int
	// MaxIdempotencyKeyBytes bounds an idempotency key (default 512, at
	// most 1024: the store indexes it). Keys must also be valid UTF-8
	// without NUL.
	MaxIdempotencyKeyBytes int
	// MaxErrorBytes bounds the message of an error a step returns (or
	// panics with) as the engine keeps it, in the step's event log, its
	// failure and the logs (default 8 KiB). A longer one is not refused
	// but cut, at a character boundary, with a note of its length.
	MaxErrorBytes int
}

// The defaults of SizeLimits, and the most an identifier may be
// configured to: the store indexes tenants and idempotency keys together
// with a workflow's name, and Postgres refuses index entries over about
// 2.7 kB.
const (
	defaultMaxPayloadBytes    = 1 << 20
	defaultMaxDepth           = 64
	defaultMaxMapItems        = 10_000
	defaultMaxTenantBytes     = 255
	defaultMaxIdempotencyKey  = 512
	defaultMaxErrorBytes      = 8 << 10
	maxIdentifierBytesAllowed = 1024
)

func (l *SizeLimits) setDefaults() error {
	fields := []struct {
		name string
		v    *int
		def  int
		most int
	}{
		{"MaxInputBytes", &l.MaxInputBytes, defaultMaxPayloadBytes, 0},
		{"MaxOutputBytes", &l.MaxOutputBytes, defaultMaxPayloadBytes, 0},
		{"MaxEventBytes", &l.MaxEventBytes, defaultMaxPayloadBytes, 0},
		{"MaxDepth", &l.MaxDepth, defaultMaxDepth, 0},
		{"MaxMapItems", &l.MaxMapItems, defaultMaxMapItems, 0},
		{"MaxTenantBytes", &l.MaxTenantBytes, defaultMaxTenantBytes, maxIdentifierBytesAllowed},
		{"MaxIdempotencyKeyBytes", &l.MaxIdempotencyKeyBytes, defaultMaxIdempotencyKey, maxIdentifierBytesAllowed},
		{"MaxErrorBytes", &l.MaxErrorBytes, defaultMaxErrorBytes, 0},
	}
	var errs []error
	for _, f := range fields {
		switch {
		case *f.v < 0:
			errs = append(errs, fmt.Errorf("runtime.Config: SizeLimits.%s is %d; give a positive limit, or 0 for the default (%d)", f.name, *f.v, f.def))
		case *f.v == 0:
			*f.v = f.def
		case f.most > 0 && *f.v > f.most:
			errs = append(errs, fmt.Errorf("runtime.Config: SizeLimits.%s is %d; it may be at most %d, since the store indexes it", f.name, *f.v, f.most))
		}
	}
	return errors.Join(errs...)
}

// ErrOverLimit is matched by a *LimitError: something a user or a step
// sent is over one of the engine's SizeLimits.
var ErrOverLimit = errors.New("over a size limit")

// LimitError says that a value is over one of the engine's SizeLimits.
// It names the value and the limit, never quoting the value. Besides
// ErrOverLimit it matches ErrInvalidInput for a run input,
// ErrInvalidOutput for a step's output and ErrInvalidEvent for an
// event's payload.
type LimitError struct {
	// Field is what is over the limit: "input", "tenant", "idempotency
	// key", "output of step grade", "payload of event confirmed",
	// "forEach of step charge".
	Field string
	// Limit names the SizeLimits field, such as "MaxInputBytes".
	Limit string
	// Max is the limit's value, and Size what was found: bytes, items,
	// or, for MaxDepth, Max+1 (the check stops one level past the limit).
	Max, Size int
	class     error // ErrInvalidInput, ErrInvalidOutput, ErrInvalidEvent or nil
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case "MaxDepth":
		return fmt.Sprintf("%s nests objects and arrays more than %d deep, over the limit (Config.SizeLimits.MaxDepth)", e.Field, e.Max)
	case "MaxMapItems":
		return fmt.Sprintf("%s has %d items, over the limit of %d (Config.SizeLimits.MaxMapItems)", e.Field, e.Size, e.Max)
	}
	return fmt.Sprintf("%s is %d bytes, over the limit of %d (Config.SizeLimits.%s)", e.Field, e.Size, e.Max, e.Limit)
}

// Is makes errors.Is(err, ErrOverLimit) true, and errors.Is with the
// sentinel of what was refused (see LimitError).
func (e *LimitError) Is(target error) bool {
	return target == ErrOverLimit || e.class != nil && target == e.class
}

// checkDocument checks a JSON document against a size limit and
// MaxDepth. field and limit name them in the error; class is the
// sentinel the error also matches.
func (l *SizeLimits) checkDocument(data []byte, field, limit string, max int, class error) error {
	if len(data) > max {
		return &LimitError{Field: field, Limit: limit, Max: max, Size: len(data), class: class}
	}
	if nestedDeeper(data, l.MaxDepth) {
		return &LimitError{Field: field, Limit: "MaxDepth", Max: l.MaxDepth, Size: l.MaxDepth + 1, class: class}
	}
	return nil
}

// checkInput checks a run input; checkOutput what a step's code returned
// (step is its name); checkEvent an event's payload.
func (l *SizeLimits) checkInput(input []byte) error {
	return l.checkDocument(input, "input", "MaxInputBytes", l.MaxInputBytes, ErrInvalidInput)
}

func (l *SizeLimits) checkOutput(step string, output []byte) error {
	return l.checkDocument(output, "output of step "+step, "MaxOutputBytes", l.MaxOutputBytes, ErrInvalidOutput)
}

func (l *SizeLimits) checkEvent(event string, payload []byte) error {
	return l.checkDocument(payload, "payload of event "+event, "MaxEventBytes", l.MaxEventBytes, ErrInvalidEvent)
}

// checkItemInput checks item i of a map step's forEach, the input of
// its run.
func (l *SizeLimits) checkItemInput(step string, i int, item []byte) error {
	return l.checkDocument(item, fmt.Sprintf("item %d of forEach of step %s", i, step), "MaxInputBytes", l.MaxInputBytes, ErrInvalidInput)
}

// checkItems checks the number of items of a map step's forEach.
func (l *SizeLimits) checkItems(step string, n int) error {
	if n > l.MaxMapItems {
		return &LimitError{Field: "forEach of step " + step, Limit: "MaxMapItems", Max: l.MaxMapItems, Size: n}
	}
	return nil
}

// checkTenant and checkIdempotencyKey check the identifiers a user names
// runs with: within their limit, valid UTF-8, without NUL (which the
// store's text cannot hold).
func (l *SizeLimits) checkTenant(tenant string) error {
	return checkIdentifier(tenant, "tenant", "MaxTenantBytes", l.MaxTenantBytes)
}

func (l *SizeLimits) checkIdempotencyKey(field, key string) error {
	return checkIdentifier(key, field, "MaxIdempotencyKeyBytes", l.MaxIdempotencyKeyBytes)
}

func checkIdentifier(s, field, limit string, max int) error {
	switch {
	case len(s) > max:
		return &LimitError{Field: field, Limit: limit, Max: max, Size: len(s)}
	case !utf8.ValidString(s):
		return identifierError(field + " is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return identifierError(field + " contains a NUL byte")
	}
	return nil
}

// identifierError says that a tenant or an idempotency key is not one;
// it matches ErrInvalidIdentifier.
type identifierError string

func (e identifierError) Error() string { return string(e) }

// Is makes errors.Is(err, ErrInvalidIdentifier) true.
func (identifierError) Is(target error) bool { return target == ErrInvalidIdentifier }

// nestedDeeper reports whether the JSON document data nests objects and
// arrays more than max deep. It reads the document once, byte by byte,
// holding nothing but the depth, and stops at the first level past max:
// a document a million levels deep costs no more to refuse than one
// max+1 deep. Each level takes two bytes, so a document of at most 2*max
// bytes is not read at all. On valid JSON it counts exactly what
// encoding/json's Decoder reports as delimiter tokens (the tests hold it
// to that, fuzzed); it is ten times faster, which matters for every
// output a step returns. A document that is not JSON may be found too
// deep or not: either way it is refused, by this check or by validation.
func nestedDeeper(data []byte, max int) bool {
	if len(data) <= 2*max {
		return false
	}
	depth := 0
	inString, escaped := false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
}

// clipError cuts the message of a step's error to MaxErrorBytes, at a
// character boundary, noting how long it was.
func (l *SizeLimits) clipError(msg string) string {
	if len(msg) <= l.MaxErrorBytes {
		return msg
	}
	cut := l.MaxErrorBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (cut: the error was %d bytes, over Config.SizeLimits.MaxErrorBytes)", msg[:cut], len(msg))
}

// elide shortens a text of more than max bytes to about max, keeping its
// start and its end (which says what is wrong, as in "'…' is not valid
// email"), cut at character boundaries.
func elide(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head, tail := max/2, len(s)-max/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + "…" + s[tail:]
}

// clip shortens a value that an error names, which may be huge: one of
// more than 64 bytes is cut to its first 32 and its length.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	cut := 32
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}
