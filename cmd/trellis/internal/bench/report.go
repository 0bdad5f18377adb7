package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteJSON writes the results as indented JSON. Durations are in
// nanoseconds (fields ending in _ns), sizes in bytes.
func WriteJSON(w io.Writer, r *Results) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing results as JSON: %w", err)
	}
	return nil
}

// Report writes the results as text: a section per scenario, each an
// aligned table with units, every figure with what it means.
func Report(w io.Writer, r *Results) {
	env := r.Environment
	fmt.Fprintf(w, "Trellis bench, %s\n", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "%s %s/%s, %d CPUs", env.GoVersion, env.OS, env.Arch, env.CPUs)
	if env.Postgres != "" {
		fmt.Fprintf(w, "; PostgreSQL %s at %s", env.Postgres, env.Database)
	}
	fmt.Fprintf(w, "\nEngines that execute steps: %s\n", r.Engine)
	reportThroughput(w, r)
	reportLatency(w, r)
	reportFairness(w, r)
	reportSleep(w, r)
	reportMap(w, r)
	reportPurge(w, r)
	reportHistory(w, r)
	reportFlow(w, r)
	if len(r.Errors) > 0 {
		fmt.Fprintln(w, "\nFAILED")
		for _, e := range r.Errors {
			fmt.Fprintln(w, "  "+strings.ReplaceAll(e, "\n", "\n    "))
		}
	}
}

func reportThroughput(w io.Writer, r *Results) {
	if len(r.Throughput) == 0 {
		return
	}
	s := r.Sizes
	fmt.Fprintln(w, "\nTHROUGHPUT  no-op steps; tasks/s and runs/s completed")
	fmt.Fprintf(w, "  burn-down: the runs are inserted first (TriggerMany, %s a call), then the workers start; measured\n", count(insertChunk))
	fmt.Fprintln(w, "             from the first STARTED event to the last COMPLETED one.")
	fmt.Fprintf(w, "  steady:    workers run while an inserter keeps at most %s runs unfinished for %s;\n", count(int64(s.MaxBacklog)), dur(s.SteadyDuration))
	fmt.Fprintf(w, "             measured over the last %s (after a %s warm-up).\n", dur(s.SteadyDuration-s.SteadyWarmup), dur(s.SteadyWarmup))
	fmt.Fprintf(w, "  paced:     as steady, but runs are inserted at %.0f%% of the rate the same workers burned down at,\n", 100*pacedLoad)
	fmt.Fprintln(w, "             so the workers keep up and waits are not backlog.")
	fmt.Fprintln(w, "  workers are worker processes; memory is one engine in this process on the memory store.")
	t := &table{indent: "  ", right: []bool{false, false, false, true, true, true, true, true, true}}
	t.add("store", "workflow", "mode", "workers", "tasks/s", "runs/s", "tasks", "runs", "window", "")
	for _, c := range r.Throughput {
		workers := strconv.Itoa(c.Workers)
		if c.Store == StoreMemory {
			workers = "in-proc"
		}
		note := ""
		switch {
		case c.Mode == ModeBurnDown && c.InsertedPerSec > 0:
			note = "inserted at " + rate(c.InsertedPerSec) + " runs/s"
			if c.WALPerTask > 0 {
				note += "; " + bytesIEC(c.WALPerTask) + " of WAL a task"
			}
			if c.DBCPUPerTask > 0 {
				note += fmt.Sprintf(", %.0f µs of database CPU", float64(c.DBCPUPerTask.Nanoseconds())/1e3)
			}
			if c.WorkerCPUPerTask > 0 {
				note += fmt.Sprintf(", %.0f µs of worker CPU", float64(c.WorkerCPUPerTask.Nanoseconds())/1e3)
			}
		case c.Mode == ModeSteady:
			note = "fewest unfinished runs seen: " + count(int64(c.MinBacklog))
			if c.MinBacklog == 0 {
				note += " (workers ran dry)"
			}
		case c.Mode == ModePaced:
			note = fmt.Sprintf("runs inserted at %s/s, %.0f%% of the burn-down's", rate(c.InsertedPerSec), 100*pacedLoad)
		}
		t.add(c.Store, c.Workflow, c.Mode, workers, rate(c.TasksPerSec), rate(c.RunsPerSec),
			count(int64(c.Tasks)), count(int64(c.Runs)), dur(c.Elapsed), note)
	}
	t.write(w)
	for _, c := range r.Throughput {
		writeNotes(w, fmt.Sprintf("%s %s %s, %d workers", c.Store, c.Workflow, c.Mode, c.Workers), c.Notes)
	}
}

func reportFlow(w io.Writer, r *Results) {
	if len(r.Flow) == 0 {
		return
	}
	fmt.Fprintln(w, "\nFLOW CONTROL  diamond-6 burn-downs, one worker process, as under THROUGHPUT")
	fmt.Fprintf(w, "  10k keys:     a workflow-wide concurrency limit by input.k, %s distinct keys, max %d each\n", count(flowKeys), flowKeysMax)
	fmt.Fprintf(w, "  1 hot key:    every run has the same key, max %d steps in progress at once (a fifth of the runs)\n", flowHotMax)
	fmt.Fprintln(w, "  3 priorities: runs inserted low, normal, high in turns of 1,000; no limit")
	fmt.Fprintf(w, "  10k rate keys: a workflow-wide rate limit by input.k, %s keys, %d starts a second each, bursts of %d\n", count(flowKeys), flowRateKeys, flowRateKeys)
	fmt.Fprintf(w, "  1 rate key:   every run has the same key, %s starts a second, no burst (a fifth of the runs)\n", count(flowRateHot))
	t := &table{indent: "  ", right: []bool{false, true, true, true, true, false}}
	t.add("case", "tasks/s", "runs/s", "tasks", "window", "")
	for _, c := range r.Flow {
		note := ""
		if c.DBCPUPerTask > 0 {
			note = fmt.Sprintf("%.0f µs of database CPU a task", float64(c.DBCPUPerTask.Nanoseconds())/1e3)
		}
		t.add(c.Workflow, rate(c.TasksPerSec), rate(c.RunsPerSec), count(int64(c.Tasks)), dur(c.Elapsed), note)
	}
	t.write(w)
	for _, c := range r.Flow {
		writeNotes(w, c.Workflow, c.Notes)
	}
}

func reportLatency(w io.Writer, r *Results) {
	if len(r.Latency) == 0 {
		return
	}
	fmt.Fprintln(w, "\nLATENCY  hand-off: a task's STARTED event time minus the latest COMPLETED (or SKIPPED) event time")
	fmt.Fprintln(w, "         among its parents, for every task with parents (0 for a task handed to its worker as its parent")
	fmt.Fprintln(w, "         was recorded: both are stamped together); run: a run's end minus its creation")
	fmt.Fprintf(w, "  idle:   one worker, %d chain-5 runs triggered one at a time, each waited for.\n", r.Sizes.LatencyRuns)
	fmt.Fprintln(w, "  steady: tasks started in the measured window of the steady throughput case; a queued task waits")
	fmt.Fprintln(w, "          behind the backlog, so expect about backlog tasks / throughput.")
	fmt.Fprintln(w, "  paced:  tasks started in the measured window of the paced throughput case.")
	t := &table{indent: "  ", right: []bool{false, false, true, true, true, true, true, true, true, true, true}}
	t.add("case", "workflow", "workers", "hand-offs", "p50", "p95", "p99", "max", "runs", "run p50", "run p99")
	for _, l := range r.Latency {
		p, rp := l.Handoffs, l.Runs
		t.add(l.Case, l.Workflow, strconv.Itoa(l.Workers), count(int64(p.Count)), dur(p.P50), dur(p.P95), dur(p.P99), dur(p.Max),
			count(int64(rp.Count)), dur(rp.P50), dur(rp.P99))
	}
	t.write(w)
	for _, l := range r.Latency {
		if e := l.EndToEnd; e.Count > 0 {
			fmt.Fprintf(w, "  %s %s end to end (trigger call to result in the client, %d runs): p50 %s, p95 %s, p99 %s, max %s\n",
				l.Case, l.Workflow, e.Count, dur(e.P50), dur(e.P95), dur(e.P99), dur(e.Max))
		}
	}
	for _, l := range r.Latency {
		writeNotes(w, fmt.Sprintf("%s %s, %d workers", l.Case, l.Workflow, l.Workers), l.Notes)
	}
}

func reportFairness(w io.Writer, r *Results) {
	f := r.Fairness
	if f == nil {
		return
	}
	fmt.Fprintln(w, "\nFAIRNESS")
	if l := f.Lone; l.Backlog > 0 {
		fmt.Fprintf(w, "  lone tenant: tenant B holds %s single-step runs; %d workers work on them; then tenant A triggers one run.\n",
			count(int64(l.Backlog)), l.Workers)
		t := &table{indent: "    ", right: []bool{false, true}}
		t.add("tasks ahead", count(int64(l.TasksAhead)), "tasks", "other tasks started after A's task was QUEUED and before it STARTED")
		t.add("claims ahead", count(int64(l.ClaimsAhead)), "claims", "claims (one worker's tasks started at one instant) in that interval")
		t.add("claimed with", count(int64(l.ClaimedWith)), "tasks", "other tasks started by the claim that started A's task")
		t.add("A's wait", dur(l.Wait), "", "A's task from QUEUED to STARTED")
		t.add("B waiting", count(int64(l.Waiting)), "tasks", "B's tasks not yet started when A's task was QUEUED")
		t.write(w)
		writeNotes(w, "lone tenant", l.Notes)
	}
	if s := f.Shared; s.Tenants > 0 {
		fmt.Fprintf(w, "  shared backlog: %d tenants insert %s single-step runs each (interleaved), then %d workers burn them down\n",
			s.Tenants, count(int64(s.RunsPerTenant)), s.Workers)
		fmt.Fprintf(w, "  in %s; each tenant's share of the %s tasks COMPLETED in the first half (ideal %s):\n",
			dur(s.Elapsed), count(int64(s.FirstHalf)), percent(1/float64(s.Tenants)))
		t := &table{indent: "    ", right: []bool{false, true, true}}
		for _, sh := range s.Shares {
			t.add(sh.Tenant, percent(sh.Share), count(int64(sh.Tasks))+" tasks")
		}
		t.write(w)
		writeNotes(w, "shared backlog", s.Notes)
	}
}

func reportSleep(w io.Writer, r *Results) {
	s := r.Sleep
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nSLEEP  %s runs, each a durable sleep of %s then a no-op step, on one engine in this process\n",
		count(int64(s.Sleepers)), s.Sleep)
	t := &table{indent: "  ", right: []bool{false, true}}
	t.add("insert", dur(s.Insert), "triggering every run (TriggerMany, engine running)")
	t.add("all asleep", dur(s.Asleep), "from the first trigger until every sleep step slept")
	t.add("goroutines", fmt.Sprintf("%d -> %d", s.IdleGoroutines, s.AsleepGoroutines), "of this process: engine idle -> every run asleep")
	t.add("live heap", bytesIEC(float64(s.IdleHeap))+" -> "+bytesIEC(float64(s.AsleepHeap)),
		fmt.Sprintf("after runtime.GC, idle -> asleep (%s per sleeper)", bytesIEC((float64(s.AsleepHeap)-float64(s.IdleHeap))/float64(s.Sleepers))))
	t.add("Postgres", bytesIEC(s.BytesPerRun)+" per run", fmt.Sprintf("trellis tables with indexes and TOAST, every run asleep (%s in all)", bytesIEC(float64(s.TableBytes))))
	t.add("lateness p50", dur(s.Lateness.P50), "WOKEN event time minus the task's wake_at")
	t.add("lateness p99", dur(s.Lateness.P99), fmt.Sprintf("(max %s)", dur(s.Lateness.Max)))
	t.add("firing", dur(s.Firing), fmt.Sprintf("first to last WOKEN event; the wake times spread over %s", dur(s.WakeSpread)))
	t.add("finishing", dur(s.Finish), "last WOKEN event to the last run COMPLETED")
	t.add("to sleep", costText(s.AsleepCost), "per run, first trigger until every run slept (trigger, claim, SLEEPING, timer)")
	t.add("to wake", costText(s.WakeCost), "per run, then until the last completed (timer fired, sleep completed, no-op step)")
	t.add("woken", rate(s.WokenTasksPerSec)+" tasks/s", "first WOKEN event to the last run COMPLETED, two tasks a run")
	t.add("reference", rate(s.Reference.TasksPerSec)+" tasks/s",
		fmt.Sprintf("burn-down of %s runs of two no-op steps by an engine of the same settings in this process", count(int64(s.Reference.Runs))))
	t.add("woken / reference", percent(s.WokenRatio), "how close waking comes to working a backlog")
	t.write(w)
	writeNotes(w, "sleep", append(s.Notes, s.Reference.Notes...))
}

// costText is a phase's cost per run: database CPU (when measured) and
// WAL.
func costText(c Cost) string {
	wal := bytesIEC(c.WAL) + " WAL"
	if c.DBCPU <= 0 {
		return wal
	}
	return fmt.Sprintf("%d µs CPU, %s", c.DBCPU.Microseconds(), wal)
}

func reportMap(w io.Writer, r *Results) {
	m := r.Map
	if m == nil {
		return
	}
	fmt.Fprintf(w, "\nMAP  one run whose map step runs a no-op item %s times, each item a run of its own, on one engine in this process\n",
		count(int64(m.Items)))
	t := &table{indent: "  ", right: []bool{false, true}}
	t.add("spawn", dur(m.Spawn), fmt.Sprintf("the transaction creating every item run and queueing it: %d statements (4, and 2 per 10,000 items)", m.SpawnStatements))
	t.add("ready", dur(m.Ready), "from the trigger to the first item STARTED")
	t.add("items", rate(m.ItemsPerSec)+" items/s", fmt.Sprintf("first item STARTED to the last COMPLETED, %s", dur(m.ItemsElapsed)))
	t.add("fan-in", dur(m.FanIn), "last item COMPLETED to the map step COMPLETED with every output, in item order")
	if m.DBCPUPerItem > 0 {
		t.add("database CPU", dur(m.DBCPUPerItem)+" per item", "Postgres processes' user and system time, trigger to completion")
	}
	t.add("WAL", bytesIEC(m.WALPerItem)+" per item", "write-ahead log written, trigger to completion")
	t.write(w)
	writeNotes(w, "map", m.Notes)
}

func reportPurge(w io.Writer, r *Results) {
	p := r.Purge
	if p == nil {
		return
	}
	fmt.Fprintf(w, "\nPURGE  %s finished runs past their retention (6 tasks and 18 events each, inserted in %s);\n",
		count(int64(p.HistoryRuns)), dur(p.HistoryInsert))
	fmt.Fprintf(w, "       a %s burn-down of %s runs on one worker, first with no purge, then while the leader\n",
		p.Baseline.Workflow, count(int64(p.Baseline.Runs)))
	fmt.Fprintln(w, "       deletes the old runs (default retention: batches of 1,000, each followed by a pause as long as it took)")
	t := &table{indent: "  ", right: []bool{false, true}}
	t.add("without purge", rate(p.Baseline.TasksPerSec)+" tasks/s", fmt.Sprintf("burn-down of %s tasks in %s", count(int64(p.Baseline.Tasks)), dur(p.Baseline.Elapsed)))
	t.add("while purging", rate(p.WithPurge.TasksPerSec)+" tasks/s", fmt.Sprintf("%s of the above; the purge ran during %s of it", percent(p.Ratio), percent(p.Overlap)))
	t.add("purged", rate(p.PurgedPerSec)+" runs/s", fmt.Sprintf("%s runs in %s, pauses included", count(int64(p.Purged)), dur(p.Elapsed)))
	t.add("batch p50", dur(p.Batches.P50), fmt.Sprintf("one statement deleting 1,000 runs with their tasks and events; %d batches, %d during the burn-down", p.Batches.Count, p.DuringBurnDown))
	t.add("batch p99", dur(p.Batches.P99), fmt.Sprintf("(max %s)", dur(p.Batches.Max)))
	t.write(w)
	writeNotes(w, "purge", append(append(p.Notes, p.Baseline.Notes...), p.WithPurge.Notes...))
}

func reportHistory(w io.Writer, r *Results) {
	h := r.History
	if h == nil {
		return
	}
	fmt.Fprintf(w, "\nHISTORY  a %s burn-down of %s runs on one worker, on an empty schema, then with %s finished runs\n",
		h.Empty.Workflow, count(int64(h.Empty.Runs)), count(int64(h.HistoryRuns)))
	fmt.Fprintf(w, "         (6 tasks and 18 events each, inserted, vacuumed and analyzed in %s; %s of tables and indexes)\n",
		dur(h.HistoryInsert), bytesIEC(float64(h.TableBytes)))
	fmt.Fprintln(w, "         in the tables, twice: first a burst the statistics do not know, then again")
	t := &table{indent: "  ", right: []bool{false, true, true}}
	claim := func(i int) string {
		if i >= len(h.ClaimMs) {
			return "-"
		}
		return fmt.Sprintf("%.2f ms a claim", h.ClaimMs[i])
	}
	cpu := func(t Throughput) string {
		if t.DBCPUPerTask <= 0 {
			return ""
		}
		return fmt.Sprintf("; %d µs of database CPU a task", t.DBCPUPerTask.Microseconds())
	}
	t.add("empty", rate(h.Empty.TasksPerSec)+" tasks/s", claim(0), fmt.Sprintf("%s tasks in %s%s", count(int64(h.Empty.Tasks)), dur(h.Empty.Elapsed), cpu(h.Empty)))
	for i, b := range h.WithHistory {
		t.add(fmt.Sprintf("with history %d", i+1), rate(b.TasksPerSec)+" tasks/s", claim(i+1),
			fmt.Sprintf("%s of empty%s", percent(b.TasksPerSec/h.Empty.TasksPerSec), cpu(b)))
	}
	t.write(w)
	fmt.Fprintf(w, "  the slower burn-down with the history ran at %s of the empty one's rate\n", percent(h.Ratio))
	notes := h.Notes
	for _, b := range append([]Throughput{h.Empty}, h.WithHistory...) {
		notes = append(notes, b.Notes...)
	}
	writeNotes(w, "history", notes)
}

// writeNotes prints a case's notes (worker log problems and the like).
func writeNotes(w io.Writer, what string, notes []string) {
	if len(notes) == 0 {
		return
	}
	fmt.Fprintf(w, "  note, %s:\n", what)
	for _, n := range notes {
		fmt.Fprintf(w, "    %s\n", n)
	}
}
