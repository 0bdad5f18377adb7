package dashboard

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/crypto/bcrypt"
)

// Roles of a users file's line.
const (
	// RoleReadOnly sees and does not act: the default.
	RoleReadOnly = "read-only"
	// RoleOperator sees and acts: triggers, cancels and retries runs,
	// pauses, resumes and deletes schedules.
	RoleOperator = "operator"
)

// maxUsersFile bounds the size of a users file read.
const maxUsersFile = 4 << 20

// Users is HTTP Basic authentication over a users file: its Authenticate
// is an Options.Authenticate. Each line of the file is
//
//	name:bcrypt-hash[:role[:tenant,tenant...]]
//
// where role is read-only (the default) or operator, and the tenants, if
// any, are the only ones whose runs the user sees. Blank lines and lines
// starting with # are skipped. A file htpasswd -B writes is a users file
// of read-only users. Passwords are compared by bcrypt, in the same time
// whether the name exists or not.
type Users struct {
	byName map[string]userEntry
	// dummy is a hash compared against for an unknown name, at the
	// highest cost of the file's, so that a wrong name takes as long as a
	// wrong password.
	dummy []byte

	mu sync.Mutex
	// verified holds the MACs of name, password and hash recently found
	// to match, so that a browser's every request does not cost a bcrypt
	// comparison (tens of milliseconds).
	verified map[[32]byte]bool
	key      []byte
}

type userEntry struct {
	user User
	hash []byte
}

// maxVerified bounds Users.verified; it is emptied when full.
const maxVerified = 1024

// LoadUsers reads a users file (see Users).
func LoadUsers(path string) (*Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading users file: %w", err)
	}
	defer f.Close()
	return ParseUsers(f, path)
}

// ParseUsers reads a users file (see Users) from r; name is what errors
// call it. It reports every bad line, by number, and never repeats a
// line's hash.
func ParseUsers(r io.Reader, name string) (*Users, error) {
	u := &Users{byName: map[string]userEntry{}, verified: map[[32]byte]bool{}, key: make([]byte, 32)}
	_, _ = rand.Read(u.key) // never fails (crypto/rand)
	sc := bufio.NewScanner(io.LimitReader(r, maxUsersFile+1))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	var errs []error
	n, size := 0, 0
	for sc.Scan() {
		n++
		size += len(sc.Bytes()) + 1
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			line = strings.TrimPrefix(line, "\ufeff") // a byte-order mark some editors write
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		e, err := parseUserLine(line)
		if err == nil {
			if _, dup := u.byName[e.user.Name]; dup {
				err = fmt.Errorf("user %q appears twice", e.user.Name)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s:%d: %w", name, n, err))
			continue
		}
		u.byName[e.user.Name] = e
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("line %d is longer than 64 KiB", n+1)
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if size > maxUsersFile {
		errs = append(errs, fmt.Errorf("%s: larger than %d MiB: is it a users file?", name, maxUsersFile>>20))
	}
	if len(errs) == 0 && len(u.byName) == 0 {
		errs = append(errs, fmt.Errorf("%s: no users: add a line name:bcrypt-hash:role (trellis dashboard hash-password makes one)", name))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cost := bcrypt.MinCost
	for _, e := range u.byName {
		c, _ := bcrypt.Cost(e.hash) // checked by parseUserLine
		cost = max(cost, c)
	}
	dummy, err := bcrypt.GenerateFromPassword(u.key, cost)
	if err != nil {
		return nil, fmt.Errorf("making the hash compared for unknown users: %w", err)
	}
	u.dummy = dummy
	return u, nil
}

// parseUserLine reads name:hash[:role[:tenants]].
func parseUserLine(line string) (userEntry, error) {
	parts := strings.Split(line, ":")
	if len(parts) < 2 || len(parts) > 4 {
		return userEntry{}, errors.New("want name:bcrypt-hash[:role[:tenant,tenant...]]")
	}
	var e userEntry
	e.user.Name = parts[0]
	if e.user.Name == "" || strings.IndexFunc(e.user.Name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return e, fmt.Errorf("user name %q: give a name without spaces", truncate(e.user.Name, 40))
	}
	e.hash = []byte(parts[1])
	if _, err := bcrypt.Cost(e.hash); err != nil {
		// Never show the hash: a line may hold a password by mistake.
		return e, fmt.Errorf("user %q: the second field is not a bcrypt hash (one starting $2a$, $2b$ or $2y$): make one with trellis dashboard hash-password or htpasswd -nB", e.user.Name)
	}
	role := RoleReadOnly
	if len(parts) > 2 && parts[2] != "" {
		role = parts[2]
	}
	switch role {
	case RoleReadOnly, "readonly":
		e.user.ReadOnly = true
	case RoleOperator:
	default:
		return e, fmt.Errorf("user %q: role %q: use %s or %s", e.user.Name, truncate(role, 40), RoleReadOnly, RoleOperator)
	}
	if len(parts) > 3 {
		for _, t := range strings.Split(parts[3], ",") {
			if t = strings.TrimSpace(t); t == "" {
				return e, fmt.Errorf("user %q: an empty tenant in %q: list tenants separated by commas", e.user.Name, truncate(parts[3], 80))
			}
			e.user.Tenants = append(e.user.Tenants, t)
		}
	}
	return e, nil
}

// basicChallenge is what a 401 asks the browser for.
type basicChallenge struct{ err error }

func (c basicChallenge) Error() string   { return c.err.Error() }
func (c basicChallenge) Unwrap() error   { return c.err }
func (basicChallenge) Challenge() string { return `Basic realm="Trellis dashboard", charset="UTF-8"` }

// Authenticate reads the request's HTTP Basic credentials and returns the
// user they name if the password matches, or an error wrapping
// ErrUnauthenticated that asks the browser for a password.
func (u *Users) Authenticate(r *http.Request) (User, error) {
	name, password, ok := r.BasicAuth()
	if !ok {
		return User{}, basicChallenge{ErrUnauthenticated}
	}
	e, known := u.byName[name]
	hash := e.hash
	if !known {
		hash = u.dummy
	}
	m := hmac.New(sha256.New, u.key)
	for _, s := range []string{name, password, string(hash)} {
		fmt.Fprintf(m, "%d:%s", len(s), s)
	}
	var mac [32]byte
	copy(mac[:], m.Sum(nil))
	u.mu.Lock()
	seen := u.verified[mac]
	u.mu.Unlock()
	if !seen {
		if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || !known {
			return User{}, basicChallenge{fmt.Errorf("%w: wrong name or password", ErrUnauthenticated)}
		}
		u.mu.Lock()
		if len(u.verified) >= maxVerified {
			clear(u.verified)
		}
		u.verified[mac] = true
		u.mu.Unlock()
	}
	user := e.user
	user.Tenants = slices.Clone(user.Tenants)
	return user, nil
}

// HashPassword returns the bcrypt hash of password for a users file.
func HashPassword(password string) (string, error) {
	if password == "" {
		return "", errors.New("the password is empty")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if errors.Is(err, bcrypt.ErrPasswordTooLong) {
		return "", errors.New("the password is longer than 72 bytes, which bcrypt cannot hash")
	}
	return string(h), err
}
