package examples_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

// TestDemosLeaveOtherRunsAlone is issue 32's "done when" for the
// examples: the -postgres demos, which run on a virtual clock that jumps
// to the next durable timer, are run as processes against a database
// where other runs sleep (orders' own -trigger and -worker, on real time,
// in the default schema and in another), one after the other in both
// orders and both at once. Afterwards the other runs' rows are as they
// were (still sleeping, the same wake times), no row anywhere has a
// finish time in the future, the demos' schemas are gone, and each demo
// printed its usual output.
func TestDemosLeaveOtherRunsAlone(t *testing.T) {
	db := pgtest.Database(t)
	bin := buildExamples(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA shop"); err != nil {
		t.Fatal(err)
	}
	others := map[string]string{"public": db, "shop": pgstore.WithSearchPath(db, "shop")}
	for _, schema := range []string{"public", "shop"} {
		sleepingRuns(t, bin, conn, schema, others[schema])
	}
	before := snapshot(t, conn)
	schemas := schemaNames(t, conn)

	check := func(when string) {
		t.Helper()
		if after := snapshot(t, conn); !slices.Equal(after, before) {
			t.Errorf("%s: the other runs changed:\n%s", when, diff(before, after))
		}
		if got := schemaNames(t, conn); !slices.Equal(got, schemas) {
			t.Errorf("%s: schemas %v, want %v (a demo's schema left behind?)", when, got, schemas)
		}
		for _, row := range futureTimes(t, conn) {
			t.Errorf("%s: a time in the future: %s", when, row)
		}
	}
	for _, order := range [][]string{{"orders", "fulfilment"}, {"fulfilment", "orders"}} {
		for _, demo := range order {
			out, err := runDemo(ctx, bin, demo, db)
			checkDemoOutput(t, demo, out, err)
			check("after " + demo + " (" + strings.Join(order, ", ") + ")")
		}
	}
	// Both at once: each in a schema of its own.
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]error, 2)
	for i, demo := range []string{"orders", "fulfilment"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = runDemo(ctx, bin, demo, db)
		}()
	}
	wg.Wait()
	for i, demo := range []string{"orders", "fulfilment"} {
		checkDemoOutput(t, demo, outs[i], errs[i])
	}
	check("after both at once")

	// Interrupted with SIGTERM once under way, each drops its schema.
	for _, demo := range []string{"orders", "fulfilment"} {
		out := interruptDemo(t, bin, demo, db, syscall.SIGTERM)
		if !strings.Contains(out, "dropped schema trellis_demo_"+demo+"_") {
			t.Errorf("%s -postgres, interrupted, did not drop its schema:\n%s", demo, out)
		}
		check(demo + " interrupted")
	}
	// Killed, each leaves its schema to the next demo (once the server
	// has ended its sessions).
	for _, demo := range []string{"orders", "fulfilment"} {
		killed := interruptDemo(t, bin, demo, db, syscall.SIGKILL)
		waitForSessions(t, conn)
		out, err := runDemo(ctx, bin, demo, db)
		checkDemoOutput(t, demo, out, err)
		if m := regexp.MustCompile(`running in a schema of its own: (\S+)`).FindStringSubmatch(killed); m == nil {
			t.Errorf("%s -postgres named no schema:\n%s", demo, killed)
		} else if want := "dropped schema " + m[1] + ", left by a demo that was killed"; !strings.Contains(killed, "dropped schema") && !strings.Contains(out, want) {
			t.Errorf("%s -postgres, run after one was killed, printed no %q:\n%s", demo, want, out)
		}
		check("after " + demo + " killed, and run again")
	}
}

// interruptDemo starts a demo on Postgres, sends it sig once it says it
// runs in its schema, and returns its output: whatever it printed before
// it ended (with an error or not: it may have finished first).
func interruptDemo(t *testing.T, bin, demo, db string, sig syscall.Signal) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), filepath.Join(bin, demo), "-postgres", "-database-url", db)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		fmt.Fprintln(&out, lines.Text())
		if strings.HasPrefix(lines.Text(), "running in a schema of its own") {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
		}
	}
	err = cmd.Wait()
	t.Logf("%s -postgres, sent %v: %v\n%s%s", demo, sig, err, out.String(), stderr.String())
	return out.String()
}

// waitForSessions waits until the only session on conn's database is
// conn's own: the server has noticed that a killed process's sessions
// are gone, and released their locks.
func waitForSessions(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	for {
		var others int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// buildExamples builds both examples into a temporary directory.
func buildExamples(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", dir+string(filepath.Separator), "./orders", "./fulfilment")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// sleepingRuns starts three orders with orders -trigger in the schema the
// connection string url uses, and runs a worker (orders -worker, on real
// time) until two of them sleep in their 24-hour fraud window and the
// third, over the limit, is rejected; then stops the worker with SIGTERM.
func sleepingRuns(t *testing.T, bin string, conn *pgx.Conn, schema, url string) {
	t.Helper()
	ctx := t.Context()
	orders := filepath.Join(bin, "orders")
	if out, err := exec.CommandContext(ctx, orders, "-postgres", "-database-url", url, "-trigger", "3").CombinedOutput(); err != nil {
		t.Fatalf("orders -trigger 3 in %s: %v\n%s", schema, err, out)
	}
	var out bytes.Buffer
	worker := exec.CommandContext(ctx, orders, "-postgres", "-database-url", url, "-worker")
	worker.Stdout, worker.Stderr = &out, &out
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = worker.Process.Kill()
			_ = worker.Wait()
		}
	}()
	settled := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s.trellis_timers) = 2
		AND (SELECT count(*) FROM %[1]s.trellis_runs WHERE status = 'COMPLETED') = 1`, pgx.Identifier{schema}.Sanitize())
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var ok bool
		if err := conn.QueryRow(ctx, settled).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker in %s did not bring the runs to their fraud window:\n%s", schema, out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := worker.Wait(); err != nil {
		t.Fatalf("the worker in %s did not stop cleanly on SIGTERM: %v\n%s", schema, err, out.String())
	}
	var sleeping int
	err := conn.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s.trellis_timers
		WHERE wake_at BETWEEN now() + interval '23 hours' AND now() + interval '24 hours'`, pgx.Identifier{schema}.Sanitize())).Scan(&sleeping)
	if err != nil || sleeping != 2 {
		t.Fatalf("in %s: %d runs sleep for about 24 hours (%v), want 2", schema, sleeping, err)
	}
}

// runDemo runs an example's demo on Postgres and returns its output.
func runDemo(ctx context.Context, bin, demo, db string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, demo), "-postgres", "-database-url", db)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s -postgres: %w\n%s", demo, err, stderr.String())
	}
	return stdout.String(), nil
}

var fastForward = regexp.MustCompile(`fast-forwarding (\S+) to the next durable timer`)

// checkDemoOutput checks that a demo succeeded and printed its usual
// lines, with no other fast-forward than its own timers'.
func checkDemoOutput(t *testing.T, demo, out string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%v\n%s", err, out)
		return
	}
	want := map[string]struct {
		lines       []string
		fastForward []string
	}{
		"orders": {
			lines:       []string{"shipped A-1001 after the fraud window", "order A-1001: run COMPLETED", "order A-1002: run COMPLETED"},
			fastForward: []string{"24h0m0s"},
		},
		"fulfilment": {
			lines: []string{
				"Ada confirms delivery of F-2001 (woke 1 waiting step)",
				"order F-2001: run COMPLETED, 2 line(s) charged", "confirm-delivery COMPLETED",
				"order F-2002: run COMPLETED, 1 line(s) charged", "confirm-delivery SKIPPED",
			},
			fastForward: []string{"48h0m0s", "72h0m0s"},
		},
	}[demo]
	for _, line := range want.lines {
		if !strings.Contains(out, line) {
			t.Errorf("%s -postgres printed no %q:\n%s", demo, line, out)
		}
	}
	var got []string
	for _, m := range fastForward.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1])
	}
	if !slices.Equal(got, want.fastForward) {
		t.Errorf("%s -postgres fast-forwarded %v, want %v:\n%s", demo, got, want.fastForward, out)
	}
}

// snapshot returns every row of the runs, tasks, timers and events of
// the schemas public and shop, as text, a line a row.
func snapshot(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	var lines []string
	for _, schema := range []string{"public", "shop"} {
		for _, table := range []string{"trellis_runs", "trellis_tasks", "trellis_timers", "trellis_events"} {
			rows, err := conn.Query(t.Context(), fmt.Sprintf(
				`SELECT row_to_json(t)::text FROM %s.%s t ORDER BY 1`, schema, table))
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range got {
				lines = append(lines, schema+"."+table+" "+row)
			}
		}
	}
	return lines
}

// diff lists the rows of before that after lacks (-) and those after
// has that before did not (+).
func diff(before, after []string) string {
	var b strings.Builder
	for _, row := range before {
		if !slices.Contains(after, row) {
			fmt.Fprintf(&b, "- %s\n", row)
		}
	}
	for _, row := range after {
		if !slices.Contains(before, row) {
			fmt.Fprintf(&b, "+ %s\n", row)
		}
	}
	return b.String()
}

// schemaNames lists the database's schemas, but Postgres's own.
func schemaNames(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT nspname::text FROM pg_namespace
		WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema' ORDER BY nspname`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// futureTimes returns, for every timestamp column of every table in
// every schema, the rows with a time in the future: none, but for the
// columns that say when something is due (a sleep's, timer's or wait's
// wake_at, a rate limit's tat).
func futureTimes(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	ctx := t.Context()
	rows, err := conn.Query(ctx, `SELECT table_schema::text, table_name::text, column_name::text
		FROM information_schema.columns
		WHERE data_type LIKE 'timestamp%' AND table_schema NOT LIKE 'pg\_%' AND table_schema <> 'information_schema'
		  AND column_name NOT IN ('wake_at', 'tat')
		ORDER BY 1, 2, 3`)
	if err != nil {
		t.Fatal(err)
	}
	type column struct{ schema, table, name string }
	columns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
		var c column
		return c, r.Scan(&c.schema, &c.table, &c.name)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(columns) == 0 {
		t.Fatal("no timestamp columns: is the database migrated?")
	}
	var future []string
	for _, c := range columns {
		// A minute's margin: the clocks compared are the same machine's.
		q := fmt.Sprintf(`SELECT %[3]s::text FROM %[1]s.%[2]s WHERE %[3]s > now() + interval '1 minute'`,
			pgx.Identifier{c.schema}.Sanitize(), pgx.Identifier{c.table}.Sanitize(), pgx.Identifier{c.name}.Sanitize())
		rows, err := conn.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		times, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range times {
			future = append(future, fmt.Sprintf("%s.%s.%s = %s", c.schema, c.table, c.name, at))
		}
	}
	return future
}
