// Package dashboard is Trellis's web UI: an http.Handler that shows what
// the operations API (package runtime/ops) reads, for people who want to
// look rather than query. It shows which runs fail and where in their DAG,
// what each step returned, and how deep each tenant's queue is, and
// it triggers, cancels and retries runs.
//
// It is built on ops alone, so it shows exactly what the trellis CLI
// does, on either store, and costs the database what the CLI's commands
// cost. Serve it with trellis dashboard, or mount it in your own server
// with your own authentication (Options.Authenticate) and host names
// (Options.AllowedHosts):
//
//	admin := ops.New(engine) // an engine that is not started will do
//	dash, err := dashboard.New(admin, dashboard.Options{Prefix: "/trellis",
//		AllowedHosts: []string{"ops.example.com"}, Authenticate: yourUser})
//	if err != nil { ... }
//	defer dash.Close()
//	mux.Handle("/trellis/", dash)
//	srv.RegisterOnShutdown(dash.Close) // end live streams on Shutdown
//
// # Pages
//
// Overview (runs created and finished over the last hour, the queue by
// tenant, stuck runs, workers and the leader), Workflows (each workflow's
// versions and DAG, its recent runs and failure rate, and a form made
// from its input schema that triggers a run through ops.Admin.Trigger),
// Runs (a filtered listing, a page at a time, with the CLI's filters
// including its CEL where), Run (the DAG coloured by step status, a
// timeline of attempts, input, outputs, errors, the event log, cancel,
// retry and a rerun from a step), Schedules (every schedule's next and
// latest tick and the run that started, pause and resume), Queue (per
// tenant and workflow, and per step of one), Workers (state, heartbeat,
// tasks, the versions each runs), and the search every page's header
// offers (a run by its id, the start of one, or its idempotency key,
// within the tenants its user sees). Listings show a hundred rows a page.
//
// # Why server-rendered
//
// Pages are html/template, and the DAG, the timeline and the charts are SVG
// drawn on the server (the DAG laid out by graph.Lay), with one small
// hand-written script for live updates and confirmations. Nothing is
// built with npm and nothing is fetched from the internet: every asset is
// embedded, and html/template escapes every value that comes from users'
// data (inputs, outputs, errors, tenants, step names) in its context.
//
// # Live updates
//
// Pages update as runs progress over server-sent events. One poller per
// Dashboard reads what the open pages show, once per PollInterval however
// many browsers watch, and renders each changed part once for all of
// them; it runs only while a page is open. For the runs pages it first
// reads one event count per watched run (ops.Admin.EventCounts), and
// reads a run in full only when its count moved.
//
// # Safety
//
// The handler answers only to the host names of Options.AllowedHosts
// (the loopback names by default), so that a page that rebinds its own
// name to the dashboard's address gets nothing (421). Every request
// passes through Options.Authenticate (Users.Authenticate is HTTP Basic
// over a users file), whose User says whether its user may act and which
// tenants' runs they see. Actions (trigger, cancel, retry, schedule
// pause, resume and delete) are POST only, and
// need a token bound to a cookie (HMAC-signed, so that a cookie planted
// by a sibling domain does not do) and, when the browser sends them, an
// Origin of an allowed host and a Sec-Fetch-Site of same-origin. A
// read-only user sees no actions, and the action URLs answer them 403.
// Every response carries a Content-Security-Policy that allows the
// dashboard's own script and style only, and all but the static assets
// Cache-Control: no-store. Live streams are capped (Options.MaxStreams).
package dashboard
