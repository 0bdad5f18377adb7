package workflow

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/effectivelabs/trellis/schema/spec"
)

// retryOverride is what one retry mapping sets. Unset fields inherit:
// a step's retry from defaults.retry, and that from the built-in policy.
type retryOverride struct {
	maxRetries    *int
	initialDelay  *time.Duration
	backoffFactor *float64
	maxDelay      *time.Duration
	// initialPos and maxPos locate initialDelay and maxDelay when this
	// mapping sets them, for the check that one does not exceed the other.
	initialPos, maxPos Pos
}

// over returns o with the fields it does not set taken from base.
func (o retryOverride) over(base retryOverride) retryOverride {
	out := base
	if o.maxRetries != nil {
		out.maxRetries = o.maxRetries
	}
	if o.initialDelay != nil {
		out.initialDelay, out.initialPos = o.initialDelay, o.initialPos
	}
	if o.backoffFactor != nil {
		out.backoffFactor = o.backoffFactor
	}
	if o.maxDelay != nil {
		out.maxDelay, out.maxPos = o.maxDelay, o.maxPos
	}
	return out
}

// apply returns p with the fields o sets replaced.
func (o retryOverride) apply(p spec.RetryPolicy) spec.RetryPolicy {
	if o.maxRetries != nil {
		p.MaxRetries = *o.maxRetries
	}
	if o.initialDelay != nil {
		p.InitialDelay = *o.initialDelay
	}
	if o.backoffFactor != nil {
		p.BackoffFactor = *o.backoffFactor
	}
	if o.maxDelay != nil {
		p.MaxDelay = *o.maxDelay
	}
	return p
}

// retry decodes a retry mapping. Fields with invalid values are reported
// and left unset. prefix and owner name the mapping in messages:
// "defaults.retry", or "retry" of owner "step \"charge\"".
func (d *decoder) retry(v *Value, prefix, owner string) retryOverride {
	var o retryOverride
	label := func(key string) string {
		if owner == "" {
			return prefix + "." + key
		}
		return prefix + "." + key + " of " + owner
	}
	if !d.isMap(v, prefix+ownerSuffix(owner), "a mapping such as {maxRetries: 3, initialDelay: 1s, backoffFactor: 2, maxDelay: 1m}") {
		return o
	}
	d.keys(v, prefix+ownerSuffix(owner), "maxRetries", "initialDelay", "backoffFactor", "maxDelay")
	if f := v.Get("maxRetries"); f != nil {
		if n, ok := d.count(f.Value, label("maxRetries")); ok {
			o.maxRetries = &n
		}
	}
	if f := v.Get("initialDelay"); f != nil {
		if dur := d.duration(f.Value, label("initialDelay")); dur > 0 {
			o.initialDelay, o.initialPos = &dur, f.Value.Pos
		}
	}
	if f := v.Get("backoffFactor"); f != nil {
		if x, ok := d.factor(f.Value, label("backoffFactor")); ok {
			o.backoffFactor = &x
		}
	}
	if f := v.Get("maxDelay"); f != nil {
		if dur := d.duration(f.Value, label("maxDelay")); dur > 0 {
			o.maxDelay, o.maxPos = &dur, f.Value.Pos
		}
	}
	return o
}

func ownerSuffix(owner string) string {
	if owner == "" {
		return ""
	}
	return " of " + owner
}

// count decodes a non-negative whole number.
func (d *decoder) count(v *Value, what string) (int, bool) {
	if v.Kind != KindNumber {
		d.probs.Add(v.Pos, "type", "%s must be a whole number such as 3, not %s", what, v.Kind)
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Str, 64)
	if err != nil || f != math.Trunc(f) {
		d.probs.Add(v.Pos, "type", "%s must be a whole number such as 3, not %s", what, v.Str)
		return 0, false
	}
	if f < 0 {
		d.probs.Add(v.Pos, "minimum", "%s must not be negative; 0 means a failure is final", what)
		return 0, false
	}
	if f > math.MaxInt32 {
		d.probs.Add(v.Pos, "", "%s is too large (%s); use at most %d", what, v.Str, math.MaxInt32)
		return 0, false
	}
	return int(f), true
}

// factor decodes a backoff factor: a number of at least 1.
func (d *decoder) factor(v *Value, what string) (float64, bool) {
	if v.Kind != KindNumber {
		d.probs.Add(v.Pos, "type", "%s must be a number such as 2, not %s", what, v.Kind)
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Str, 64)
	if err != nil {
		d.probs.Add(v.Pos, "type", "%s must be a number such as 2, not %s", what, v.Str)
		return 0, false
	}
	if f < 1 {
		d.probs.Add(v.Pos, "minimum", "%s must be at least 1 (1 keeps the delay fixed, 2 doubles it for each retry), not %s", what, v.Str)
		return 0, false
	}
	return f, true
}

// retryProblem reports a problem spec.RetryPolicy.Check found in an
// effective policy (local over base over the built-in policy) at the
// mapping that caused it: local when it sets the offending field (or, for
// delays that disagree, either of the two), else base, which the policy
// inherits the problem from. Only delays can disagree in a policy the
// decoder built, since it refuses bad values one by one.
func (d *decoder) retryProblem(p spec.Problem, local, base retryOverride) {
	eff := local.over(base).apply(spec.DefaultRetryPolicy())
	if p.Field != "retry.maxDelay" {
		d.probs.Add(local.initialPos, "", "%s", p.Message)
		return
	}
	switch {
	case local.maxDelay != nil:
		d.probs.Add(local.maxPos, "", "maxDelay %s is shorter than initialDelay %s: raise maxDelay or lower initialDelay",
			shortDuration(eff.MaxDelay), shortDuration(eff.InitialDelay))
	case local.initialDelay != nil:
		from := "the built-in policy"
		if base.maxDelay != nil {
			from = "defaults.retry"
		}
		d.probs.Add(local.initialPos, "", "initialDelay %s is longer than maxDelay %s (from %s): lower initialDelay or set maxDelay here",
			shortDuration(eff.InitialDelay), shortDuration(eff.MaxDelay), from)
	default:
		d.retryProblem(p, base, retryOverride{})
	}
}

// shortDuration formats d as people write it: 1m rather than 1m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
