package pgstore

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Configure prepares a pool configuration for Trellis: each connection it
// opens reads and writes uuid.UUID values as the 16 bytes they are. Pools
// made by Connect are configured already; call it on the configuration of
// a pool of your own before creating it (it keeps an AfterConnect hook
// already set, and runs it first).
//
// Without it, pgx passes each uuid.UUID through its database/sql Value
// method: as text, which pgx first fails to encode (building an error),
// then parses. For the arrays of run ids every batch carries, that was
// 29% of a worker's CPU in a chain burn-down. Everything works either way.
func Configure(cfg *pgxpool.Config) {
	next := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if next != nil {
			if err := next(ctx, conn); err != nil {
				return err
			}
		}
		registerUUID(conn.TypeMap())
		return nil
	}
}

// registerUUID makes m encode and scan uuid.UUID through pgtype's UUID
// codec directly, for uuid and uuid[] values only.
func registerUUID(m *pgtype.Map) {
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}}
	m.RegisterType(t)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
}

// uuidCodec is pgtype's UUID codec, with plans for uuid.UUID that skip its
// database/sql methods.
type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok {
		if next := c.UUIDCodec.PlanEncode(m, oid, format, uuidValue{}); next != nil {
			return uuidEncodePlan{next}
		}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok {
		if next := c.UUIDCodec.PlanScan(m, oid, format, (*uuidTarget)(nil)); next != nil {
			return uuidScanPlan{next}
		}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

// uuidValue is a uuid.UUID that pgtype's UUID codec encodes as is.
type uuidValue uuid.UUID

func (u uuidValue) UUIDValue() (pgtype.UUID, error) { return pgtype.UUID{Bytes: u, Valid: true}, nil }

type uuidEncodePlan struct{ next pgtype.EncodePlan }

func (p uuidEncodePlan) Encode(value any, buf []byte) ([]byte, error) {
	return p.next.Encode(uuidValue(value.(uuid.UUID)), buf)
}

// uuidTarget is a *uuid.UUID that pgtype's UUID codec scans into as is.
// NULL scans as the zero UUID, as uuid.UUID's Scan method has it.
type uuidTarget uuid.UUID

func (u *uuidTarget) ScanUUID(v pgtype.UUID) error {
	*u = v.Bytes
	return nil
}

type uuidScanPlan struct{ next pgtype.ScanPlan }

func (p uuidScanPlan) Scan(src []byte, target any) error {
	return p.next.Scan(src, (*uuidTarget)(target.(*uuid.UUID)))
}
