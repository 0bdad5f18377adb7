package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Step adapts the code of a step that has parents and an output to a
// StepFunc. The StepFunc decodes the run input into In and the parents'
// outputs into P, calls fn and encodes its output.
//
// P is a struct with one field per parent, tagged with the parent's name
// (`trellis:"charge"`), as generated parents structs are: a struct field
// holds the output of a parent that must have completed (the StepFunc
// fails when it did not), a pointer field the output of a parent that may
// have been skipped (nil then), and a bool field tells whether a parent
// without output completed. Step panics when P is not such a struct.
//
// Input or parent outputs that do not decode, and required parents that
// did not complete, are NonRetryable errors: the same bytes would fail
// again.
func Step[In, P, O any](fn func(context.Context, In, P) (O, error)) StepFunc {
	return adapt(parentsDecoder[P](), func(ctx context.Context, in In, p P) (json.RawMessage, error) {
		out, err := fn(ctx, in, p)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
}

// StepNoOutput is Step for a step without output.
func StepNoOutput[In, P any](fn func(context.Context, In, P) error) StepFunc {
	return adapt(parentsDecoder[P](), func(ctx context.Context, in In, p P) (json.RawMessage, error) {
		return nil, fn(ctx, in, p)
	})
}

// RootStep is Step for a step without parents.
func RootStep[In, O any](fn func(context.Context, In) (O, error)) StepFunc {
	return Step(func(ctx context.Context, in In, _ struct{}) (O, error) { return fn(ctx, in) })
}

// RootStepNoOutput is Step for a step without parents and without output.
func RootStepNoOutput[In any](fn func(context.Context, In) error) StepFunc {
	return StepNoOutput(func(ctx context.Context, in In, _ struct{}) error { return fn(ctx, in) })
}

// adapt is what every step adapter does: decode the run input and the
// parents, then call the step.
func adapt[In, P any](decode func(*StepRequest) (P, error), call func(context.Context, In, P) (json.RawMessage, error)) StepFunc {
	return func(ctx context.Context, req *StepRequest) (json.RawMessage, error) {
		in, err := decodeInput[In](req.Info.Workflow, req.Input)
		if err != nil {
			return nil, err
		}
		parents, err := decode(req)
		if err != nil {
			return nil, err
		}
		return call(ctx, in, parents)
	}
}

// FailureHandler adapts the code of a workflow's failure handler to a
// FailureFunc: it decodes the run input into In (a NonRetryable error when
// it does not decode) and calls fn with it and the failure.
func FailureHandler[In any](fn func(context.Context, In, Failure) error) FailureFunc {
	return func(ctx context.Context, req *FailureRequest) error {
		in, err := decodeInput[In](req.Info.Workflow, req.Input)
		if err != nil {
			return err
		}
		return fn(ctx, in, req.Failure)
	}
}

// decodeInput decodes a run input; the error names the workflow.
func decodeInput[In any](workflow string, raw json.RawMessage) (In, error) {
	var in In
	if err := json.Unmarshal(raw, &in); err != nil {
		what := "input"
		if workflow != "" {
			what = workflow + " input"
		}
		return in, NonRetryable(fmt.Errorf("decoding %s: %w", what, err))
	}
	return in, nil
}

// parentField is how one field of a parents struct is filled.
type parentField struct {
	index int
	name  string // the parent step's name
	kind  parentKind
}

type parentKind int

const (
	parentRequired  parentKind = iota // a struct: the output of a parent that completed
	parentOptional                    // a pointer: nil when the parent was skipped
	parentCompleted                   // a bool: whether the parent completed
)

// parentsDecoder returns the function that fills a P from a request. It
// inspects P once, and panics when P is not a parents struct.
func parentsDecoder[P any]() func(*StepRequest) (P, error) {
	t := reflect.TypeFor[P]()
	fields, err := parentFields(t)
	if err != nil {
		panic(fmt.Sprintf("runtime: %v", err))
	}
	return func(req *StepRequest) (P, error) {
		var p P
		v := reflect.ValueOf(&p).Elem()
		for _, f := range fields {
			raw, ok := req.Parent(f.name)
			fv := v.Field(f.index)
			switch f.kind {
			case parentCompleted:
				fv.SetBool(ok)
				continue
			case parentOptional:
				if !ok {
					continue
				}
				fv.Set(reflect.New(fv.Type().Elem()))
				fv = fv.Elem()
			case parentRequired:
				if !ok {
					return p, NonRetryable(fmt.Errorf("step %s did not complete, though step %s cannot run without it", f.name, req.Info.Step))
				}
			}
			if err := json.Unmarshal(raw, fv.Addr().Interface()); err != nil {
				return p, NonRetryable(fmt.Errorf("decoding output of %s: %w", f.name, err))
			}
		}
		return p, nil
	}
}

// parentFields describes the fields of a parents struct.
func parentFields(t reflect.Type) ([]parentField, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("parents type %s is not a struct", t)
	}
	var fields []parentField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("trellis"), ",")
		if name == "" {
			return nil, fmt.Errorf("field %s of parents type %s has no trellis tag naming its parent", sf.Name, t)
		}
		if !sf.IsExported() {
			return nil, fmt.Errorf("field %s of parents type %s is not exported", sf.Name, t)
		}
		f := parentField{index: i, name: name}
		switch sf.Type.Kind() {
		case reflect.Bool:
			f.kind = parentCompleted
		case reflect.Pointer:
			f.kind = parentOptional
		default:
			f.kind = parentRequired
		}
		fields = append(fields, f)
	}
	return fields, nil
}
