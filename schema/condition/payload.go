package condition

import (
	"encoding/json"
	"fmt"

	"github.com/google/cel-go/cel"
)

// NewPayloadEnv builds the environment of the expressions of a
// workflow's startOn: its filter (Compile) and the fields of the input it
// builds (CompileValue). They read one variable, payload, the event's
// payload, typed by the JSON Schema payloadSchema as input is in
// conditions; there are no parents. Bind the payload with BindPayload.
func NewPayloadEnv(payloadSchema json.RawMessage) (*Env, error) {
	b := newBuilder()
	in, err := b.document("trellis.payload", payloadSchema)
	if err != nil {
		return nil, fmt.Errorf("payload schema: %w", err)
	}
	e := &Env{root: "payload", input: in, parents: map[string]*shape{}}
	e.pobj = &objectType{name: "trellis.parents", fields: map[string]*shape{}}
	b.objects[e.pobj.name] = e.pobj
	e.objects = b.objects
	prov, err := newProvider(b.objects)
	if err != nil {
		return nil, err
	}
	e.cel, err = cel.NewEnv(
		cel.EnableIdentifierEscapeSyntax(),
		cel.CustomTypeProvider(prov),
		cel.CustomTypeAdapter(prov),
		cel.Variable("payload", in.cel),
	)
	if err != nil {
		return nil, fmt.Errorf("building payload expression environment: %w", err)
	}
	return e, nil
}

// BindPayload converts an event's payload into the values the
// expressions of a payload environment (NewPayloadEnv) read.
func (e *Env) BindPayload(payload json.RawMessage) (*Vars, error) {
	in, err := decodeAndConvert(e.input, payload, e.root)
	if err != nil {
		return nil, err
	}
	return &Vars{root: e.root, input: in, parents: &object{typ: e.pobj, fields: map[string]any{}}}, nil
}
