package ops

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/schema/condition"
)

// What the operations API shows of a run's data passes through its
// workflow version's definition, which replaces every value the version's
// schemas mark sensitive by runtime.Redacted (see
// runtime.SensitiveKeyword). When the version cannot be loaded, nothing
// says which values are sensitive, so the whole document is redacted.

// redactInput is what to show of a run input of version def.
func redactInput(def *runtime.Definition, input []byte) json.RawMessage {
	if def == nil {
		return redactedWhole(input)
	}
	return def.RedactInput(input)
}

// redactOutput is what to show of the output of step i of a run of def.
func redactOutput(def *runtime.Definition, i int, output []byte) json.RawMessage {
	if def == nil {
		return redactedWhole(output)
	}
	return def.RedactOutput(i, output)
}

func redactedWhole(doc []byte) json.RawMessage {
	if len(doc) == 0 {
		return json.RawMessage(doc)
	}
	return json.RawMessage(strconv.Quote(runtime.Redacted))
}

// readsSensitive returns an issue when a filter that type-checks against
// an input schema reads a value the schema marks sensitive: a filter
// could disclose such a value one guess at a time, so none may read one.
func readsSensitive(inputSchema, expr string) []condition.Issue {
	if !strings.Contains(inputSchema, runtime.SensitiveKeyword) {
		return nil
	}
	stripped, err := runtime.WithoutSensitive(json.RawMessage(inputSchema))
	if err == nil {
		var env *condition.FilterEnv
		if env, err = condition.NewFilterEnv(stripped); err == nil {
			if _, iss := env.Compile(expr); iss == nil {
				return nil
			}
		}
	}
	return []condition.Issue{{Line: 1, Column: 1, Message: "the filter reads an input field marked " + runtime.SensitiveKeyword +
		": filtering on it could disclose its value, so it is refused; filter on other fields"}}
}
