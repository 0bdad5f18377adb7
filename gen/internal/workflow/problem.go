package workflow

import (
	"fmt"
	"sort"
)

// Pos is a position in a workflow file: Line and Column count from 1, and
// Column counts characters, not bytes. The zero Pos means "no position".
type Pos struct {
	Line   int
	Column int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Column) }

// Problem is one thing wrong with a workflow file, located at the value it
// is about.
type Problem struct {
	File    string
	Line    int
	Column  int
	Message string

	// rule names what was checked, in JSON Schema vocabulary where one
	// applies (type, required, additionalProperties ...). Two problems at
	// the same position with the same rule are the same problem found
	// twice, once by the format schema and once by a semantic check.
	rule string
	// fromSchema is true for problems found by validating against the
	// format's JSON Schema; the semantic check's wording wins over them.
	fromSchema bool
}

// Pos is the position of the problem.
func (p Problem) Pos() Pos { return Pos{Line: p.Line, Column: p.Column} }

// String formats the problem the way compilers do: file:line:col: message.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Message)
}

// Problems collects the problems of one file.
type Problems struct {
	file string
	list []Problem
}

// NewProblems returns an empty collection for file.
func NewProblems(file string) *Problems { return &Problems{file: file} }

// Add records a problem at pos. rule names the check (see Problem), or is
// empty for checks that no other check duplicates.
func (ps *Problems) Add(pos Pos, rule, format string, args ...any) {
	if pos.Line < 1 {
		pos = Pos{Line: 1, Column: 1}
	}
	if pos.Column < 1 {
		pos.Column = 1
	}
	ps.list = append(ps.list, Problem{
		File: ps.file, Line: pos.Line, Column: pos.Column,
		Message: fmt.Sprintf(format, args...), rule: rule,
	})
}

// addFromSchema records a problem found by the format schema.
func (ps *Problems) addFromSchema(pos Pos, rule, msg string) {
	ps.Add(pos, rule, "%s", msg)
	ps.list[len(ps.list)-1].fromSchema = true
}

// Len is the number of problems recorded so far.
func (ps *Problems) Len() int { return len(ps.list) }

// List returns the problems sorted by position, each reported once: exact
// repeats are dropped, and so is a format-schema problem when a semantic
// check found the same thing (same position and rule), since the semantic
// message says more.
func (ps *Problems) List() []Problem {
	return Sorted(ps.list)
}

// Sorted returns problems sorted by file and position with duplicates
// removed; see Problems.List.
func Sorted(problems []Problem) []Problem {
	type key struct {
		file      string
		line, col int
		rule      string
	}
	semantic := map[key]bool{}
	for _, p := range problems {
		if !p.fromSchema && p.rule != "" {
			semantic[key{p.File, p.Line, p.Column, p.rule}] = true
		}
	}
	type exact struct {
		file      string
		line, col int
		msg       string
	}
	seen := map[exact]bool{}
	out := make([]Problem, 0, len(problems))
	for _, p := range problems {
		if p.fromSchema && semantic[key{p.File, p.Line, p.Column, p.rule}] {
			continue
		}
		e := exact{p.File, p.Line, p.Column, p.Message}
		if seen[e] {
			continue
		}
		seen[e] = true
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Column != b.Column {
			return a.Column < b.Column
		}
		return a.Message < b.Message
	})
	return out
}
