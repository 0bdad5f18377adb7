package workflow

import (
	"context"
	"encoding/json"

	"github.com/effectivelabs/trellis/schema/condition"
	"github.com/effectivelabs/trellis/schema/spec"
)

// inputExpr is an expression over the run input alone, and what it is
// in messages ("priority", "concurrency key").
type inputExpr struct {
	expr *Expr
	what string
}

// checkInputExprs type-checks the expressions over the run input alone
// (the priority and the concurrency and rate limits' keys) against the input
// schema, with the runtime's own condition package and one environment
// for all of them. When the input schema has problems (reported already)
// it checks only their syntax.
func checkInputExprs(w *Workflow, lines [][]byte, probs *Problems) {
	var exprs []inputExpr
	if w.Priority != nil {
		exprs = append(exprs, inputExpr{w.Priority, "priority"})
	}
	if w.Concurrency != nil {
		exprs = append(exprs, inputExpr{&w.Concurrency.Key, "concurrency key"})
	}
	if w.RunConcurrency != nil {
		exprs = append(exprs, inputExpr{&w.RunConcurrency.Key, "run concurrency key"})
	}
	if w.Debounce != nil {
		exprs = append(exprs, inputExpr{&w.Debounce.Key, "debounce key"})
	}
	if w.RateLimit != nil && w.RateLimit.Key != nil {
		exprs = append(exprs, inputExpr{w.RateLimit.Key, "rate limit key"})
	}
	for _, s := range w.Steps {
		if s.Concurrency != nil {
			exprs = append(exprs, inputExpr{&s.Concurrency.Key, "concurrency key"})
		}
		if s.RateLimit != nil && s.RateLimit.Key != nil {
			exprs = append(exprs, inputExpr{s.RateLimit.Key, "rate limit key"})
		}
		if s.WaitFor != nil && s.WaitFor.Key != nil {
			exprs = append(exprs, inputExpr{s.WaitFor.Key, "waitFor key"})
		}
	}
	if len(exprs) == 0 {
		return
	}
	if w.Input == nil || !w.Input.OK {
		for _, x := range exprs {
			for _, iss := range condition.Parse(x.expr.Source) {
				probs.Add(exprPos(lines, *x.expr, iss.Line, iss.Column), "", "invalid %s: %s", x.what, iss.Message)
			}
		}
		return
	}
	env, err := condition.NewInputEnv(json.RawMessage(w.Input.JSON))
	if err != nil {
		probs.Add(exprs[0].expr.Pos, "", "cannot type-check the %s: %v", exprs[0].what, err)
		return
	}
	for _, x := range exprs {
		if x.expr == w.Priority {
			checkPriority(env, *x.expr, lines, probs)
			continue
		}
		_, issues := env.CompileKey(x.expr.Source)
		for _, iss := range issues {
			probs.Add(exprPos(lines, *x.expr, iss.Line, iss.Column), "", "invalid %s: %s", x.what, iss.Message)
		}
	}
}

// checkPriority type-checks the priority expression e, and checks that a
// constant expression's value is a priority, 1 (low) to 3 (high) (the
// decoder checks an integer written as such). A priority that reads the
// input is checked when a run is triggered.
func checkPriority(env *condition.InputEnv, e Expr, lines [][]byte, probs *Problems) {
	x, issues := env.CompileInt(e.Source)
	for _, iss := range issues {
		probs.Add(exprPos(lines, e, iss.Line, iss.Column), "", "invalid priority: %s", iss.Message)
	}
	if x == nil {
		return
	}
	if p, ok := x.Constant(context.Background()); ok && !spec.ValidPriority(int(p)) {
		probs.Add(e.Pos, "", "priority %s is %d, out of range: use 1 (low), 2 (normal) or 3 (high)", e.Source, p)
	}
}
