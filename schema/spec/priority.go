package spec

import "strconv"

// Run priorities, which a workflow's Priority expression yields and a
// trigger may set: within its tenant, a run of higher priority has its
// tasks claimed first (runtime/store/priority.go says the rule).
const (
	PriorityLow    = 1
	PriorityNormal = 2
	PriorityHigh   = 3
)

// ValidPriority reports whether p is a run priority.
func ValidPriority(p int) bool { return p >= PriorityLow && p <= PriorityHigh }

// PriorityName says a priority in words: "low", "normal" or "high"; the
// number itself for anything else.
func PriorityName(p int) string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityNormal:
		return "normal"
	case PriorityHigh:
		return "high"
	}
	return strconv.Itoa(p)
}
