package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTick is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100
// on Linux whatever the kernel's own tick).
const clockTick = 10 * time.Millisecond

// serverCPU returns the CPU time (user and system) the PostgreSQL
// processes on this machine have used so far: every process named
// postgres, with the time of the children they have reaped (a backend
// that exited is counted in its postmaster's). ok is false when there is
// none (the server runs elsewhere) or /proc cannot be read. The
// difference of two readings is the database's CPU in between; other
// clusters on the machine count too, so measure on a quiet one.
func serverCPU() (cpu time.Duration, ok bool) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, false
	}
	var ticks int64
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended
		}
		n, isPostgres, err := postgresTicks(b)
		if err != nil {
			return 0, false
		}
		if isPostgres {
			ticks += n
			ok = true
		}
	}
	return time.Duration(ticks) * clockTick, ok
}

// processCPU returns the CPU time (user and system, with its reaped
// children's) process pid has used so far; ok is false when /proc cannot
// tell.
func processCPU(pid int) (cpu time.Duration, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	_, ticks, err := statTicks(b)
	if err != nil {
		return 0, false
	}
	return time.Duration(ticks) * clockTick, true
}

// postgresTicks reads a /proc/PID/stat line: whether the process is named
// postgres and, if so, its user and system time and its reaped
// children's, in clock ticks.
func postgresTicks(stat []byte) (ticks int64, isPostgres bool, err error) {
	comm, ticks, err := statTicks(stat)
	if err != nil || comm != "postgres" {
		return 0, false, err
	}
	return ticks, true, nil
}

// statTicks reads a /proc/PID/stat line: the process's name and its user
// and system time and its reaped children's, in clock ticks.
func statTicks(stat []byte) (comm string, ticks int64, err error) {
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so
	// split after the last closing one.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", 0, fmt.Errorf("no process name in stat line %q", stat)
	}
	comm = string(stat[open+1 : end])
	// After comm: state(3) ... utime(14) stime(15) cutime(16) cstime(17).
	fields := bytes.Fields(stat[end+1:])
	if len(fields) < 15 {
		return "", 0, fmt.Errorf("short stat line %q", stat)
	}
	for _, f := range fields[11:15] {
		n, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return "", 0, err
		}
		ticks += n
	}
	return comm, ticks, nil
}

// Cost is what a phase cost the database per unit of work (a run, a task,
// an item: what costMeter.lap divides by): the CPU of its processes
// (zero when the server is not on this machine) and the write-ahead log
// it wrote.
type Cost struct {
	DBCPU time.Duration `json:"db_cpu_ns"`
	WAL   float64       `json:"wal_bytes"`
}

// costMeter holds the server's CPU and WAL position at the start of a
// phase.
type costMeter struct {
	pool  *pgxpool.Pool
	cpu   time.Duration
	cpuOK bool
	wal   string
}

func startCost(ctx context.Context, pool *pgxpool.Pool) (costMeter, error) {
	m := costMeter{pool: pool}
	var err error
	if m.wal, err = walPosition(ctx, pool); err != nil {
		return m, err
	}
	m.cpu, m.cpuOK = serverCPU()
	return m, nil
}

// lap returns the cost of each of the n units of work since m started,
// and a meter started now. (The WAL includes the harness's own polling,
// a few bytes a poll.)
func (m costMeter) lap(ctx context.Context, n int) (Cost, costMeter, error) {
	var c Cost
	cpu, cpuOK := serverCPU()
	wal, err := walSince(ctx, m.pool, m.wal)
	if err != nil {
		return c, m, err
	}
	c.WAL = float64(wal) / float64(n)
	if m.cpuOK && cpuOK && cpu > m.cpu {
		c.DBCPU = (cpu - m.cpu) / time.Duration(n)
	}
	next, err := startCost(ctx, m.pool)
	return c, next, err
}
