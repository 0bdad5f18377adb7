package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// Keys of any length. The values of concurrency, rate limit and waitFor
// keys come from CEL over a run's input, and the key of an event sent
// with Send from its caller: they may be megabytes long and hold any
// character. The store keeps them in indexes, which refuse long entries
// (Postgres's b-tree: about 2.7 kB) and NUL bytes; a key it cannot keep
// would fail the claim or the record that carries it again and again.
//
// storedKey is the one place that turns such a value into the key the
// store keeps, on every engine and for both stores: the waiter and the
// sender of a keyed event, and every version of the engine, compute the
// same key for the same value. A value of at most keyDigestOver bytes
// of valid UTF-8, without NUL and not itself looking like a digest, is
// kept as it is (so keys stored before digests existed keep their
// meaning); any other is kept as keyDigestPrefix and the hex SHA-256 of
// its bytes. Two values share a stored key only when they are equal (or
// collide under SHA-256).

// keyDigestOver is the longest key value kept as it is, in bytes. It is
// not configurable: engines that disagreed on it would not agree on
// keys.
const keyDigestOver = 128

// keyDigestPrefix starts a key value stored as its digest.
const keyDigestPrefix = "sha256:"

// storedKey is the key the store keeps for a key value: the value, or
// its digest (see above).
func storedKey(value string) string {
	if len(value) <= keyDigestOver && utf8.ValidString(value) &&
		!strings.ContainsRune(value, 0) && !strings.HasPrefix(value, keyDigestPrefix) {
		return value
	}
	sum := sha256.Sum256([]byte(value))
	return keyDigestPrefix + hex.EncodeToString(sum[:])
}
