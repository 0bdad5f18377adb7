package bench

import (
	"context"
	"errors"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/effectivelabs/trellis/runtime"
)

// metricInterval is how often the bench's metric reader collects: more
// often than a Prometheus scrape usually comes, so that the cost of
// collecting (the gauges read the store on the leader) is in the figures.
const metricInterval = time.Second

// withTelemetry turns OpenTelemetry on in cfg when s.OTel asks for it:
// the SDK's providers, set up as a production process would (spans
// through a batching processor, every span sampled; metrics through a
// periodic reader), exporting to exporters that drop what they are given,
// so that what is measured is the engine's instrumentation and the SDK,
// not a collector. It returns the function that shuts them down.
func (s EngineSettings) withTelemetry(cfg *runtime.Config) (shutdown func(context.Context) error) {
	if !s.OTel {
		return func(context.Context) error { return nil }
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(
		sdkmetric.NewPeriodicReader(discardMetrics{}, sdkmetric.WithInterval(metricInterval))))
	cfg.TracerProvider, cfg.MeterProvider = tp, mp
	return func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }
}

// discardSpans is a span exporter that drops every span.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// discardMetrics is a metric exporter that drops every collection.
type discardMetrics struct{}

func (discardMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (discardMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (discardMetrics) Export(context.Context, *metricdata.ResourceMetrics) error { return nil }
func (discardMetrics) ForceFlush(context.Context) error                          { return nil }
func (discardMetrics) Shutdown(context.Context) error                            { return nil }
