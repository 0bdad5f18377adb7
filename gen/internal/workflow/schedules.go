package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// checkSchedules checks each schedule's cron expression and time zone the
// way the runtime reads them (the same parser, robfig/cron's standard
// five fields and descriptors), and its input against the input schema.
func checkSchedules(w *Workflow, probs *Problems) {
	var input *jsonschema.Schema
	if w.Input != nil && w.Input.OK {
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		if err := c.AddResource(schemaURL, strings.NewReader(w.Input.JSON)); err == nil {
			input, _ = c.Compile(schemaURL)
		}
	}
	for i, sc := range w.Schedules {
		what := fmt.Sprintf("schedule %q", sc.Name)
		if sc.Name == "" {
			what = fmt.Sprintf("schedules[%d]", i)
		}
		if sc.Cron != "" {
			if _, err := cron.ParseStandard(sc.Cron); err != nil {
				probs.Add(sc.CronPos, "", "invalid cron expression %q: %v; write five fields (minute hour day-of-month month day-of-week), such as \"0 3 * * *\", or @hourly, @daily, @weekly", sc.Cron, err)
			}
		}
		if sc.Timezone != "" {
			if _, err := time.LoadLocation(sc.Timezone); err != nil {
				probs.Add(sc.TZPos, "", "unknown time zone %q: use an IANA name such as Europe/Amsterdam or America/New_York", sc.Timezone)
			}
		}
		if input == nil {
			continue
		}
		var doc any = map[string]any{}
		at := sc.Pos
		if sc.Input != nil {
			raw, _ := json.Marshal(sc.Input.JSON())
			_ = json.Unmarshal(raw, &doc)
			at = sc.Input.Pos
		}
		err := input.Validate(doc)
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			continue
		}
		for _, leaf := range leaves(ve, nil) {
			pos := at
			if sc.Input != nil {
				if v, _ := sc.Input.Lookup(leaf.InstanceLocation); v != nil {
					pos = v.Pos
				}
			}
			probs.Add(pos, "", "input of %s does not match the input schema at %s: %s", what, describeInput(leaf.InstanceLocation), leaf.Message)
		}
	}
}

// describeInput renders a location within an input: /items/0/sku becomes
// input.items[0].sku.
func describeInput(ptr string) string {
	if ptr == "" {
		return "input"
	}
	return fmt.Sprintf("input.%s", describePointer(ptr))
}
