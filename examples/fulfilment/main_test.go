package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore"
	"github.com/effectivelabs/trellis/runtime/store/pgstore/pgtest"
)

func TestDemoMemory(t *testing.T) { testDemo(t, memstore.New()) }

func TestDemoPostgres(t *testing.T) { testDemo(t, pgstore.New(pgtest.Pool(t))) }

func testDemo(t *testing.T, st store.Store) {
	var out bytes.Buffer
	if err := demo(t.Context(), st, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"charged 1 x KETTLE: €39.99", "charged 4 x MUG: €34.00", "charged 2 x LAMP: €49.00",
		"booked a courier for 2 parcel(s) to 1 Analytical Way, London",
		"fast-forwarding 48h0m0s", "Ada confirms delivery of F-2001 (woke 1 waiting step)",
		"order F-2001: €73.99 charged, shipped with Speedy (TRK-F-2001-2), delivery confirmed by Ada",
		"fast-forwarding 72h0m0s",
		"order F-2002: €49.00 charged, shipped with Speedy (TRK-F-2002-1), no confirmation in 3 days: support ticket opened",
		"order F-2001: run COMPLETED, 2 line(s) charged", "confirm-delivery COMPLETED",
		"order F-2002: run COMPLETED, 1 line(s) charged", "confirm-delivery SKIPPED",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "GIFT-NOTE") {
		t.Errorf("the free line was charged:\n%s", out.String())
	}
}
