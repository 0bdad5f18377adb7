package condition

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"

	"github.com/effectivelabs/trellis/internal/suggest"
)

// The type checker's words for a name it does not know.
var (
	undefinedField = regexp.MustCompile(`^undefined field '([^']+)'$`)
	undeclaredName = regexp.MustCompile(`^undeclared reference to '([^']+)'`)
)

// hinted adds to each issue about an unknown field or variable a guess
// at the one meant, as lint does for YAML keys: "undefined field 'amout';
// did you mean "amount"?". A field is guessed among those of the object
// it is selected from, when the path to it starts at input and names
// objects only, else among every field of the input; a variable among
// vars, the first of which is the variable in is the type of.
func hinted(env *cel.Env, in *shape, vars []string, expr string, iss []Issue) []Issue {
	var parsed *cel.Ast
	for i, is := range iss {
		var word string
		var candidates []string
		if m := undefinedField.FindStringSubmatch(is.Message); m != nil {
			if parsed == nil {
				parsed, _ = env.Parse(expr)
			}
			word, candidates = m[1], fieldCandidates(parsed, in, vars[0], m[1])
		} else if m := undeclaredName.FindStringSubmatch(is.Message); m != nil {
			// Filters have no container: CEL's note of it says nothing.
			iss[i].Message = strings.TrimSuffix(is.Message, " (in container '')")
			word, candidates = m[1], vars
		} else {
			continue
		}
		if guess := suggest.Closest(word, candidates); guess != "" && guess != word {
			iss[i].Message += fmt.Sprintf("; did you mean %q?", guess)
		}
	}
	return iss
}

// fieldCandidates returns the fields name was likely meant among: those
// of the object a selection of name in parsed reads from, or every field
// reachable from in.
func fieldCandidates(parsed *cel.Ast, in *shape, root, name string) []string {
	if parsed != nil {
		for _, sel := range ast.MatchDescendants(ast.NavigateAST(parsed.NativeRep()), ast.KindMatcher(ast.SelectKind)) {
			s := sel.AsSelect()
			if s.FieldName() != name {
				continue
			}
			if obj := objectAt(s.Operand(), in, root); obj != nil && obj.fields[name] == nil {
				return obj.order
			}
		}
	}
	var all []string
	seen := map[*objectType]bool{}
	var walk func(*shape)
	walk = func(s *shape) {
		switch {
		case s == nil:
		case s.object != nil && !seen[s.object]:
			seen[s.object] = true
			for _, f := range s.object.order {
				if !slices.Contains(all, f) {
					all = append(all, f)
				}
				walk(s.object.fields[f])
			}
		case s.elem != nil:
			walk(s.elem)
		}
	}
	walk(in)
	return all
}

// objectAt returns the object e reads, when e is the variable root (of
// type in) or a selection of object fields from it (input.address), or
// nil.
func objectAt(e ast.Expr, in *shape, root string) *objectType {
	switch e.Kind() {
	case ast.IdentKind:
		if e.AsIdent() == root {
			return in.object
		}
	case ast.SelectKind:
		s := e.AsSelect()
		if obj := objectAt(s.Operand(), in, root); obj != nil {
			if f := obj.fields[s.FieldName()]; f != nil {
				return f.object
			}
		}
	}
	return nil
}
