package dashboard

import (
	"fmt"
	"strings"

	"github.com/effectivelabs/trellis/runtime/ops"
)

// Chart geometry, in SVG user units.
const (
	chartW     = 760
	chartH     = 180
	chartLeft  = 44 // room for the y axis labels
	chartBelow = 22 // room for the x axis labels
	chartTop   = 8
)

// chart is the activity chart of the overview: per bucket, a bar of the
// runs that finished in it (completed, failed, cancelled, stacked), and
// a line of the runs created.
type chart struct {
	W, H    float64
	Bars    []chartBar
	Created string // the polyline's points
	YTicks  []chartTick
	XTicks  []chartTick
	Empty   bool
}

type chartBar struct {
	X, W  float64
	Segs  []chartSeg
	Title string
}

type chartSeg struct {
	Y, H  float64
	Class string
}

type chartTick struct {
	At    float64
	Label string
}

func newChart(a *ops.Activity) chart {
	c := chart{W: chartW, H: chartH}
	if a == nil || len(a.Buckets) == 0 {
		c.Empty = true
		return c
	}
	top := 0
	for _, b := range a.Buckets {
		top = max(top, b.Finished(), b.Created)
	}
	c.Empty = top == 0
	top = niceCeiling(top)
	plotW, plotH := float64(chartW-chartLeft-4), float64(chartH-chartBelow-chartTop)
	step := plotW / float64(len(a.Buckets))
	y := func(n int) float64 { return chartTop + plotH - plotH*float64(n)/float64(top) }
	var line []string
	for i, b := range a.Buckets {
		x := chartLeft + float64(i)*step
		bar := chartBar{X: x + step*0.1, W: step * 0.8, Title: fmt.Sprintf("%s: %d created, %d completed, %d failed, %d cancelled",
			b.Start.Format("15:04"), b.Created, b.Completed, b.Failed, b.Cancelled)}
		base := 0
		for _, part := range []struct {
			n     int
			class string
		}{{b.Completed, "completed"}, {b.Failed, "failed"}, {b.Cancelled, "cancelled"}} {
			if part.n > 0 {
				bar.Segs = append(bar.Segs, chartSeg{Y: y(base + part.n), H: y(base) - y(base+part.n), Class: part.class})
				base += part.n
			}
		}
		c.Bars = append(c.Bars, bar)
		line = append(line, fmt.Sprintf("%.1f,%.1f", x+step/2, y(b.Created)))
	}
	c.Created = strings.Join(line, " ")
	for _, n := range []int{0, top / 2, top} {
		c.YTicks = append(c.YTicks, chartTick{At: y(n), Label: fmt.Sprint(n)})
	}
	every := max(1, len(a.Buckets)/6)
	for i := 0; i < len(a.Buckets); i += every {
		c.XTicks = append(c.XTicks, chartTick{At: chartLeft + float64(i)*step, Label: a.Buckets[i].Start.Format("15:04")})
	}
	return c
}

// niceCeiling rounds n up to 1, 2 or 5 times a power of ten (at least 2,
// so that the middle tick is a whole number).
func niceCeiling(n int) int {
	for p := 1; ; p *= 10 {
		for _, m := range []int{2, 5, 10} {
			if n <= m*p {
				return m * p
			}
		}
	}
}
