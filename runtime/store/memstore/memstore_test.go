package memstore_test

import (
	"testing"

	"github.com/effectivelabs/trellis/runtime/store"
	"github.com/effectivelabs/trellis/runtime/store/internal/storetest"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memstore.New() })
}
