package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// metricsServer serves an engine's metrics for Prometheus to scrape: the
// engine records them through OpenTelemetry (runtime.Config's
// MeterProvider), and OpenTelemetry's Prometheus exporter turns them into
// Prometheus' text format at /metrics. trellis.task.duration becomes
// trellis_task_duration_seconds, trellis.workflow.name the label
// trellis_workflow_name, and so on.
type metricsServer struct {
	// Provider is what to set as runtime.Config.MeterProvider.
	Provider *sdkmetric.MeterProvider
	srv      *http.Server
	ln       net.Listener
	served   chan error
}

// startMetrics listens on addr (":9090"; port 0 picks one) and serves
// /metrics until Close.
func startMetrics(addr string) (*metricsServer, error) {
	// A registry of its own, rather than Prometheus' global one: only
	// what this provider exports is served.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("creating the Prometheus exporter: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serving metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	m := &metricsServer{
		Provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter)),
		srv:      &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		ln:       ln,
		served:   make(chan error, 1),
	}
	go func() { m.served <- m.srv.Serve(ln) }()
	return m, nil
}

// URL is where the metrics are served.
func (m *metricsServer) URL() string {
	return "http://" + m.ln.Addr().String() + "/metrics"
}

// Close stops serving and shuts the provider down.
func (m *metricsServer) Close(ctx context.Context) error {
	err := m.srv.Shutdown(ctx)
	if serr := <-m.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, m.Provider.Shutdown(ctx))
}
