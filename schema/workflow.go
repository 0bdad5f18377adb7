// Package schema embeds the schemas Trellis ships, so that every binary
// carries exactly the version it was built with. Among them is the JSON
// Schema of the workflow YAML format, which editors use through a
// "# yaml-language-server: $schema=..." comment and which trellis lint
// validates every file against.
package schema

import _ "embed"

//go:embed workflow.schema.json
var workflowSchema []byte

// WorkflowSchemaURL is the $id of the workflow format's JSON Schema.
const WorkflowSchemaURL = "https://github.com/effectivelabs/trellis/schema/workflow.schema.json"

// WorkflowSchema returns the JSON Schema (draft 2020-12) of the workflow
// YAML format. It returns a fresh copy, so callers may keep or modify it.
func WorkflowSchema() []byte {
	return append([]byte(nil), workflowSchema...)
}
