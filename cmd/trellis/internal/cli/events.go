package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/clock"
	"github.com/effectivelabs/trellis/runtime/ops"
)

// EventsCommand is trellis events: it publishes an event, starting the
// workflows that start on it (and, with a key, waking the steps waiting
// for it by key in every workflow), or sends one workflow's event to the
// waits of a run, or by key, as a workflow's generated client would.
type EventsCommand struct {
	// Clock stamps the events sent; nil is the system clock.
	Clock clock.Clock
}

// Name implements Command.
func (EventsCommand) Name() string { return "events" }

// Summary implements Command.
func (EventsCommand) Summary() string {
	return "publish an event to the workflows it starts, or send it to waiting steps (send)"
}

// EventsSendOptions are the options of trellis events send.
type EventsSendOptions struct {
	OpsOptions
	Workflow, Event string
	// Run is the id of the run to send the event to, or a unique start of
	// it; Key the key to send it with (one of them). A published event
	// takes a Key too: it wakes the steps waiting for it with that key.
	Run, Key string
	// Tenant is the tenant of the runs a keyed event reaches, or that a
	// published event starts.
	Tenant string
	// ID is the id of a published event, which makes publishing it
	// idempotent.
	ID string
	// Payload is the event's payload, a JSON object.
	Payload string
	// Tags are -tag flags, each key=value: the tags of the runs a
	// published event starts.
	Tags TagFlags
}

// publishes reports whether the options publish the event (no workflow:
// to the workflows that start on it, and with a key to the waits for it)
// rather than send it.
func (o EventsSendOptions) publishes() bool { return o.Workflow == "" }

// Validate reports what is wrong with the options, naming each flag.
func (o EventsSendOptions) Validate() error {
	var errs []error
	switch {
	case o.publishes():
		if o.Run != "" {
			errs = append(errs, errors.New("-run sends an event of a workflow to one run: give the workflow, the event and its payload"))
		}
	case o.ID != "":
		errs = append(errs, errors.New("-id goes with a published event (trellis events send EVENT PAYLOAD): an event sent to a run or by key has none"))
	case o.Run == "" && o.Key == "":
		errs = append(errs, errors.New("give -run RUN to send the event to a run, or -key KEY to send it by key"))
	case o.Run != "" && o.Key != "":
		errs = append(errs, errors.New("give -run or -key, not both"))
	case o.Run != "":
		if err := ops.CheckRunRef(o.Run); err != nil {
			errs = append(errs, fmt.Errorf("-run %w", err))
		}
	}
	if len(o.Tags) > 0 && !o.publishes() {
		errs = append(errs, errors.New("-tag goes with a published event (trellis events send EVENT PAYLOAD): an event sent to a run or by key starts no run"))
	} else if tags, tagErrs := o.Tags.tags(); len(tagErrs) > 0 {
		errs = append(errs, tagErrs...)
	} else if err := runtime.CheckTags(tags); err != nil {
		errs = append(errs, err)
	}
	if o.Tenant != "" && o.Run != "" {
		errs = append(errs, errors.New("-tenant goes with -key: an event sent to a run reaches that run, whatever its tenant"))
	}
	if !json.Valid([]byte(o.Payload)) {
		errs = append(errs, fmt.Errorf("the payload %q is not JSON: give the event's payload as a JSON object, such as '{\"signedBy\": \"ada\"}'", o.Payload))
	}
	return errors.Join(errs...)
}

// Run implements Command.
func (c EventsCommand) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sub, args := splitSubcommand(args, []string{"send", "help"})
	switch sub {
	case "help", "":
		if sub == "" && !wantsHelp(args) {
			c.usage(stderr)
			return ExitUsage
		}
		c.usage(stdout)
		return ExitOK
	case "send":
		o := EventsSendOptions{OpsOptions: OpsOptions{Clock: c.Clock}}
		fs := newFlagSet("events send", "[flags] [WORKFLOW] EVENT PAYLOAD",
			"With EVENT and PAYLOAD (a JSON object), publish the event: start a run of every\n"+
				"workflow that starts on it (its startOn) and whose filter matches, in the tenant\n"+
				"(-tenant), once per event id (-id). With -key, also wake the steps waiting for it\n"+
				"with that key, in every workflow, as sending it by key to each would, once per\n"+
				"event id. It prints what the event did to each workflow.\n"+
				"\n"+
				"With WORKFLOW too, send event EVENT of workflow WORKFLOW, checked against\n"+
				"the event's schema in the workflow's newest stored version: to one run (-run),\n"+
				"whose steps waiting for it receive it, or by key (-key), for the steps waiting\n"+
				"for it with that key in runs of the tenant (-tenant). A step that begins to\n"+
				"wait later receives it then. It prints how many waiting steps it woke.")
		addOpsFlags(fs, &o.OpsOptions)
		fs.StringVar(&o.Run, "run", "", "send the event to this `run` (its id, or a unique start of it)")
		fs.StringVar(&o.Key, "key", "", "send the event with this `key`; a published event wakes the steps waiting for it with it")
		fs.StringVar(&o.Tenant, "tenant", "", "the `tenant` of the runs a published event starts, or with -key of the runs it reaches (default: the default tenant)")
		fs.StringVar(&o.ID, "id", "", "the `id` of a published event: publishing the same id again starts nothing new")
		fs.Var(&o.Tags, "tag", "a tag, `key=value`, of the runs a published event starts (repeatable)")
		payload := fs.String("payload", "", "the event's payload, a `JSON` object, instead of the last argument")
		if code := parseFlags(fs, args, stderr); code >= 0 {
			return code
		}
		positional := fs.Args()
		if *payload != "" {
			positional = append(positional, *payload)
		}
		switch len(positional) {
		case 2:
			o.Event, o.Payload = positional[0], positional[1]
		case 3:
			o.Workflow, o.Event, o.Payload = positional[0], positional[1], positional[2]
		default:
			fmt.Fprintln(stderr, "trellis events send: give an event and its payload to publish it (trellis events send [-id ID] [-key KEY] EVENT PAYLOAD), or a workflow, an event and its payload to send it (trellis events send [-run RUN | -key KEY] WORKFLOW EVENT PAYLOAD)")
			return ExitUsage
		}
		return EventsSend(ctx, o, stdout, stderr)
	}
	unknownSubcommand(stderr, c.Name(), sub, []string{"send"})
	c.usage(stderr)
	return ExitUsage
}

func (EventsCommand) usage(w io.Writer) {
	fmt.Fprint(w, `Usage: trellis events send [flags] [WORKFLOW] EVENT PAYLOAD

	trellis events send [-id ID] [-tenant T] EVENT PAYLOAD           start the workflows that start on it
	trellis events send EVENT -payload PAYLOAD [-id ID] [-tenant T]  the same
	trellis events send -id ID -key KEY EVENT PAYLOAD                the same, and wake waits by key
	trellis events send -run RUN WORKFLOW EVENT PAYLOAD              to one run
	trellis events send -key KEY [-tenant T] WORKFLOW EVENT PAYLOAD  by key

PAYLOAD is a JSON object, given last or with -payload. Takes -database-url
(default $TRELLIS_DATABASE_URL) and -format text|json.
`)
}

// EventsSend runs trellis events send with opts and returns its exit
// code.
func EventsSend(ctx context.Context, o EventsSendOptions, stdout, stderr io.Writer) int {
	if o.publishes() {
		return eventsPublish(ctx, o, stdout, stderr)
	}
	return opsRun(ctx, "events send", o.OpsOptions, o.Validate(), 0, stderr, func(a *ops.Admin) (int, error) {
		e := runtime.EventByName{Workflow: o.Workflow, Event: o.Event, Key: o.Key, Tenant: o.Tenant, Payload: json.RawMessage(o.Payload)}
		if o.Run != "" {
			id, code, err := findRun(ctx, a, "events send", stderr, o.Run)
			if code >= 0 || err != nil {
				return code, err
			}
			e.Run = id
		}
		sent, err := a.Engine().SendEvent(ctx, e)
		if err != nil {
			return 0, err
		}
		if o.Format == "json" {
			return -1, printJSON(stdout, sent)
		}
		to := "run " + e.Run.String()
		if o.Run == "" {
			to = "key " + o.Key
		}
		steps := "steps"
		if sent.Woken == 1 {
			steps = "step"
		}
		_, err = fmt.Fprintf(stdout, "sent %s of %s to %s: woke %d waiting %s\n", o.Event, o.Workflow, to, sent.Woken, steps)
		return -1, err
	})
}

// eventsPublish publishes an event: trellis events send EVENT PAYLOAD.
// It prints what the event did to each workflow it reached, and fails
// when one of them refused it.
func eventsPublish(ctx context.Context, o EventsSendOptions, stdout, stderr io.Writer) int {
	return opsRun(ctx, "events send", o.OpsOptions, o.Validate(), 0, stderr, func(a *ops.Admin) (int, error) {
		var opts []runtime.RunOption
		if o.Tenant != "" {
			opts = append(opts, runtime.WithTenant(o.Tenant))
		}
		if tags, _ := o.Tags.tags(); len(tags) > 0 {
			opts = append(opts, runtime.WithTags(tags))
		}
		if o.Key != "" {
			opts = append(opts, runtime.WithEventKey(o.Key))
		}
		pub, err := a.Engine().PublishEvent(ctx, o.Event, o.ID, json.RawMessage(o.Payload), opts...)
		var refused *runtime.PublishError
		if err != nil && !errors.As(err, &refused) {
			return 0, err
		}
		if o.Format == "json" {
			if err := printJSON(stdout, pub); err != nil {
				return 0, err
			}
		} else if err := printPublished(stdout, pub); err != nil {
			return 0, err
		}
		if refused != nil {
			return 0, fmt.Errorf("%s refused the event", plural(len(refused.Refused), "workflow"))
		}
		return -1, nil
	})
}

// printPublished prints what a published event did, workflow by
// workflow: to the workflows that start on it (RESULT) and, published
// with a key, to the waits for it (WAITS).
func printPublished(w io.Writer, pub runtime.Published) error {
	if len(pub.Listeners) == 0 {
		none := "no workflow starts on it"
		if pub.Key != "" {
			none = "no workflow starts on it or waits for it by key"
		}
		_, err := fmt.Fprintf(w, "published %s: %s\n", oneLine(pub.Event), none)
		return err
	}
	with := ""
	if pub.Key != "" {
		with = " with key " + oneLine(pub.Key)
	}
	if _, err := fmt.Fprintf(w, "published %s%s to %s:\n", oneLine(pub.Event), with, plural(len(pub.Listeners), "workflow")); err != nil {
		return err
	}
	header := []string{"WORKFLOW", "VERSION", "RUN", "RESULT"}
	if pub.Key != "" {
		header = append(header, "WAITS")
	}
	t := newTable(w, header...)
	for _, l := range pub.Listeners {
		run, result, st := "", "", plain
		switch {
		case l.Refused != "":
			result, st = "refused: "+l.Refused, bad
		case l.Filtered:
			result = "filtered out"
		case l.Existing:
			result, run = "already started", l.Run.String()
		case l.Run != runtime.RunID{}:
			result, run, st = "started", l.Run.String(), good
		}
		if pub.Key == "" {
			t.row(l.Workflow, l.Version, run, result)
			t.paint(3, st)
			continue
		}
		waits, wst := "", plain
		switch d := l.Delivered; {
		case d == nil:
		case d.Repeat:
			waits = "already delivered"
		default:
			waits = "woke " + plural(d.Woken, "waiting step")
			if d.Woken > 0 {
				wst = good
			}
		}
		t.row(l.Workflow, l.Version, run, result, waits)
		t.paint(3, st)
		t.paint(4, wst)
	}
	return t.flush()
}
