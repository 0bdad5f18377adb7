package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
)

// Map is what a map step costs: one run whose map step runs a no-op item
// o.MapItems times, each item a run of its own, and collects their
// outputs, on one engine in this process.
type Map struct {
	Items int `json:"items"`
	// Spawn is how long the store took to record the map step's spawn:
	// one transaction that creates every item run with its task and
	// queues them (Finish, as the engine called it). SpawnStatements is
	// how many statements that transaction ran: four, and two per 10,000
	// items (the runs, then their tasks).
	Spawn           time.Duration `json:"spawn_ns"`
	SpawnStatements int           `json:"spawn_statements"`
	// Ready is from the trigger to the first item's STARTED event:
	// claiming the map step, evaluating its items and spawning them.
	Ready time.Duration `json:"ready_ns"`
	// ItemsElapsed is from the first item's STARTED event to the last
	// one's COMPLETED; ItemsPerSec divides the items by it.
	ItemsElapsed time.Duration `json:"items_elapsed_ns"`
	ItemsPerSec  float64       `json:"items_per_sec"`
	// FanIn is from the last item's COMPLETED event to the map step's:
	// waking the map step and collecting every output, in item order.
	FanIn time.Duration `json:"fan_in_ns"`
	// DBCPUPerItem is the Postgres processes' CPU time from the trigger
	// to the map step's completion, per item (zero when the server runs
	// elsewhere); WALPerItem the write-ahead log written meanwhile.
	DBCPUPerItem time.Duration `json:"db_cpu_per_item_ns"`
	WALPerItem   float64       `json:"wal_per_item_bytes"`
	Notes        []string      `json:"notes,omitempty"`
}

// mapName is the workflow of the map scenario.
const mapName = "bench-map"

// mapSpec maps a no-op step over input.items, each output the item.
func mapSpec() *runtime.WorkflowSpec {
	return &runtime.WorkflowSpec{
		Name:        mapName,
		Description: "Trellis bench workflow: a map step over input.items, its code doing nothing.",
		InputSchema: `{"type":"object","required":["items"],"properties":{"items":{"type":"array","items":{"type":"integer"}}}}`,
		Steps: []runtime.StepSpec{{
			Name: "each", Retry: runtime.DefaultRetryPolicy(),
			ForEach:      &runtime.ForEachSpec{Items: "input.items", ItemSchema: `{"type":"integer"}`},
			OutputSchema: `{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`,
		}},
	}
}

// echo is the code of each item: its output is the item.
func echo(_ context.Context, req *runtime.StepRequest) (json.RawMessage, error) {
	return json.RawMessage(`{"n":` + string(req.Input) + `}`), nil
}

// spawnTimer times the store calls that record spawns, and counts the
// statements they run (those whose context it marked: see
// statementCounter).
type spawnTimer struct {
	store.Store
	mu   sync.Mutex
	took time.Duration
	ran  int
}

func (s *spawnTimer) Finish(ctx context.Context, r store.Results) (store.FinishResult, error) {
	if len(r.Spawns) == 0 {
		return s.Store.Finish(ctx, r)
	}
	n := new(atomic.Int64)
	t0 := time.Now()
	res, err := s.Store.Finish(context.WithValue(ctx, countedKey{}, n), r)
	took := time.Since(t0)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.took += took
	s.ran += int(n.Load())
	return res, err
}

// RunMap runs the map scenario.
func RunMap(ctx context.Context, o Options) (res Map, err error) {
	log := o.logger().With("scenario", "map", "items", o.MapItems)
	db, err := openDatabase(ctx, o.DatabaseURL)
	if err != nil {
		return res, err
	}
	defer func() {
		if o.Keep {
			log.Info("keeping schema", "schema", db.schema)
		}
		err = errors.Join(err, db.close(context.WithoutCancel(ctx), o.Keep))
	}()
	// The engine gets a pool of its own, as a worker process would; a
	// tracer counts its statements.
	cfg, err := pgxpool.ParseConfig(pgstore.WithSearchPath(db.url, db.schema))
	if err != nil {
		return res, pgstore.RedactErr(err, db.url)
	}
	cfg.ConnConfig.Tracer = statementCounter{}
	pgstore.Configure(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return res, pgstore.RedactErr(err, db.url)
	}
	defer pool.Close()
	timer := &spawnTimer{Store: pgstore.New(pool)}
	logs := &logTail{}
	ecfg := runtime.Config{Store: timer, WorkerID: "bench-map", Logger: slog.New(slog.NewTextHandler(logs, nil))}
	// -map-items may ask for more items, and so a longer input, than the
	// engine takes by default.
	ecfg.SizeLimits.MaxMapItems = max(o.MapItems, 1)
	ecfg.SizeLimits.MaxInputBytes = max(16*o.MapItems, 1<<20)
	o.Engine.apply(&ecfg)
	shutdown := o.Engine.withTelemetry(&ecfg)
	defer func() { _ = shutdown(context.WithoutCancel(ctx)) }()
	engine, err := runtime.New(ecfg)
	if err != nil {
		return res, fmt.Errorf("creating the engine: %w", err)
	}
	wf, err := engine.Register(mapSpec(), runtime.Handlers{Steps: map[string]runtime.StepFunc{"each": echo}})
	if err != nil {
		return res, err
	}
	if err := engine.Start(ctx); err != nil {
		return res, fmt.Errorf("starting the engine: %w", err)
	}
	defer func() {
		stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err = errors.Join(err, engine.Stop(stop))
		res.Notes = append(res.Notes, logs.problems()...)
	}()
	if err := sleepCtx(ctx, time.Second); err != nil { // leadership, listening
		return res, err
	}
	items := make([]string, o.MapItems)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	input := json.RawMessage(`{"items":[` + strings.Join(items, ",") + `]}`)

	meter, err := startCost(ctx, db.pool)
	if err != nil {
		return res, err
	}
	log.Info("triggering the map")
	t0 := time.Now()
	ref, err := wf.Trigger(ctx, input)
	if err != nil {
		return res, err
	}
	if err := waitRunsDone(ctx, db.pool, 25*time.Millisecond, caseTimeout(o.MapItems), o.stall()); err != nil {
		return res, err
	}
	cost, _, err := meter.lap(ctx, o.MapItems)
	if err != nil {
		return res, err
	}
	if err := checkAllCompleted(ctx, db.pool); err != nil {
		return res, err
	}
	res = Map{Items: o.MapItems, Spawn: timer.took, SpawnStatements: timer.ran, WALPerItem: cost.WAL, DBCPUPerItem: cost.DBCPU}
	var first, last, mapDone time.Time
	var n int
	err = db.pool.QueryRow(ctx, `
		SELECT min(e.at) FILTER (WHERE e.type = 'STARTED'), max(e.at) FILTER (WHERE e.type = 'COMPLETED'),
		       count(*) FILTER (WHERE e.type = 'COMPLETED'),
		       (SELECT m.at FROM trellis_event_log m WHERE m.run_id = $1 AND m.type = 'COMPLETED')
		FROM trellis_event_log e JOIN trellis_runs r ON r.id = e.run_id
		WHERE r.parent_run_id = $1`, ref.ID).Scan(&first, &last, &n, &mapDone)
	if err != nil {
		return res, fmt.Errorf("reading the items' events: %w", err)
	}
	if n != o.MapItems {
		return res, fmt.Errorf("%d items completed, want %d", n, o.MapItems)
	}
	out, err := wf.Result(ctx, ref.ID)
	if err != nil {
		return res, err
	}
	var outputs []struct{ N int }
	if err := json.Unmarshal(out.Outputs["each"], &outputs); err != nil {
		return res, fmt.Errorf("decoding the map's output: %w", err)
	}
	if len(outputs) != o.MapItems {
		return res, fmt.Errorf("the map's output holds %d items, want %d", len(outputs), o.MapItems)
	}
	for i, x := range outputs {
		if x.N != i {
			return res, fmt.Errorf("item %d of the map's output is %d: not in item order", i, x.N)
		}
	}
	res.Ready = first.Sub(t0)
	res.ItemsElapsed = last.Sub(first)
	res.ItemsPerSec = perSecond(o.MapItems, res.ItemsElapsed)
	res.FanIn = mapDone.Sub(last)
	log.Info("done", "items/s", int(res.ItemsPerSec), "spawn", res.Spawn, "fan-in", res.FanIn)
	return res, nil
}

// countedKey marks a context whose statements statementCounter counts,
// into the *atomic.Int64 it holds.
type countedKey struct{}

// statementCounter is a pgx tracer that counts the statements run with a
// context marked by countedKey, BEGIN and COMMIT included: those of one
// store call, whatever else runs on the pool meanwhile.
type statementCounter struct{}

func (statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if n, ok := ctx.Value(countedKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
	return ctx
}

func (statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
