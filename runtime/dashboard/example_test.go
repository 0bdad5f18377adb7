package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/effectivelabs/trellis/runtime"
	"github.com/effectivelabs/trellis/runtime/dashboard"
	"github.com/effectivelabs/trellis/runtime/ops"
	"github.com/effectivelabs/trellis/runtime/store/memstore"
)

// Mount the dashboard in your own server, under a prefix, behind your
// own sign-in. Here it runs over the memory store and answers one
// request; in production the engine is runtime.New(runtime.Config{Store:
// pgstore.New(pool)}), and need not be started.
func ExampleNew() {
	engine, err := runtime.New(runtime.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	dash, err := dashboard.New(ops.New(engine), dashboard.Options{
		Prefix:       "/trellis",
		AllowedHosts: []string{"ops.example.com"}, // other host names get 421
		ReadOnly:     true,                        // look, do not act
	})
	if err != nil {
		panic(err)
	}
	defer dash.Close()

	mux := http.NewServeMux()
	mux.Handle("/trellis/", dash) // wrap it in your authentication, or set Options.Authenticate
	srv := &http.Server{Addr: ":8443", Handler: mux}
	srv.RegisterOnShutdown(dash.Close) // end live streams, so that Shutdown need not wait for them
	// srv.ListenAndServeTLS(...) in production; here, two requests:

	for _, url := range []string{"https://ops.example.com/trellis/runs", "https://elsewhere.example/trellis/runs"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
		fmt.Println(rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Cache-Control"))
	}
	// Output:
	// 200 text/html; charset=utf-8 no-store
	// 421 text/plain; charset=utf-8 no-store
}
