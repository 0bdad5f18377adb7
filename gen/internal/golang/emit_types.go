package golang

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// types declares the input and output types and everything they hold, in
// the order the schemas mention them.
func (e *emitter) types() {
	for _, t := range e.p.types {
		switch t.kind {
		case namedStruct:
			fields := make([]jen.Code, 0, len(t.fields))
			for _, f := range t.fields {
				fields = append(fields, fieldCode(f))
			}
			e.f.Add(doc(t.doc).Type().Id(t.name).Struct(fields...))
		case namedEnum:
			e.f.Add(doc(t.doc).Type().Id(t.name).String())
			consts := make([]jen.Code, 0, len(t.values))
			for _, v := range t.values {
				consts = append(consts, jen.Id(v.name).Id(t.name).Op("=").Lit(v.value))
			}
			e.f.Add(doc(fmt.Sprintf("Allowed values of %s.", t.name)).Const().Defs(consts...))
		case namedOther:
			e.f.Add(doc(t.doc).Type().Id(t.name).Add(typeCode(t.under)))
		}
	}
}

func fieldCode(f *field) jen.Code {
	tag := f.json
	if !f.required {
		tag += ",omitempty"
	}
	typ := typeCode(f.typ)
	if f.pointer() {
		typ = jen.Op("*").Add(typ)
	}
	s := jen.Null()
	if f.doc != "" {
		s = doc(f.doc)
	}
	return s.Id(f.name).Add(typ).Tag(map[string]string{"json": tag})
}

// typeCode renders a Go type expression.
func typeCode(t *goType) *jen.Statement {
	switch t.kind {
	case kindTime:
		return jen.Qual("time", "Time")
	case kindSlice:
		return jen.Index().Add(typeCode(t.elem))
	case kindMap:
		return jen.Map(jen.String()).Add(typeCode(t.elem))
	case kindNamed:
		return jen.Id(t.named.name)
	}
	return jen.Id(t.builtin)
}
