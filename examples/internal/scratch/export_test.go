package scratch

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kill ends the demo's sessions without dropping its schema, as kill -9
// of the demo's process would, and waits on conn until the server has
// ended the session that held the schema's lock.
func (s *Schema) Kill(ctx context.Context, conn *pgx.Conn) error {
	var pid uint32
	if err := s.hold.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		return err
	}
	s.Pool.Close()
	if err := s.hold.Close(ctx); err != nil {
		return err
	}
	for {
		var alive bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)", pid).Scan(&alive); err != nil || !alive {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}
