package components

import "strconv"

// BarChartView is a bar chart drawn as inline SVG, without script or style attributes (the
// console's CSP allows neither): geometry in presentation attributes, colours from classes in
// console.css. Every group is one point on the x axis with a bar per series side by side.
type BarChartView struct {
	// Label names the chart for screen readers (the SVG's aria-label and title).
	Label string
	// Width and Height are the viewBox; the SVG scales to its container.
	Width, Height int
	Series        []ChartSeries
	Groups        []ChartGroup
	// Ticks label some groups under the x axis.
	Ticks []ChartTick
	// MaxLabel is the value at the top of the plot ("12"); BaseY and TopY are where the axis
	// and the top gridline are drawn.
	MaxLabel     string
	BaseY, TopY  int
	PlotX, PlotW int
	// Empty: every value is zero; the chart says so instead of drawing flat bars.
	Empty bool
}

// ChartSeries is one kind of bar and its legend entry; Class colours it (console.css).
type ChartSeries struct {
	Name, Class string
}

// ChartGroup is one point on the x axis: its label and its bars.
type ChartGroup struct {
	Label string
	Bars  []ChartBar
}

// ChartBar is one bar, placed; Title is its tooltip ("14:00 · 3 messages").
type ChartBar struct {
	X, Y, W, H string
	Class      string
	Value      int64
	Title      string
}

// ChartTick is one label under the x axis, centred at X.
type ChartTick struct {
	X     string
	Label string
}

// ChartPoint is one group's data for NewBarChart.
type ChartPoint struct {
	Label  string
	Values []int64 // one per series, in the order of the series
}

// NewBarChart lays points out on a width × height canvas: the plot leaves room for the scale on
// the left and the tick labels below; bars scale to the largest value; every tickEvery-th group
// (and the last) gets its label under the axis. unit names a value in the tooltips, per series
// ("message", "run"), pluralised with s.
func NewBarChart(label string, width, height int, series []ChartSeries, units []string, points []ChartPoint, tickEvery int) BarChartView {
	const left, right, top, bottom = 28, 4, 8, 20
	v := BarChartView{Label: label, Width: width, Height: height, Series: series,
		BaseY: height - bottom, TopY: top, PlotX: left, PlotW: width - left - right}
	var max int64
	for _, p := range points {
		for _, x := range p.Values {
			max = maxInt64(max, x)
		}
	}
	v.Empty = max == 0
	v.MaxLabel = strconv.FormatInt(max, 10)
	if len(points) == 0 || len(series) == 0 {
		return v
	}
	plotH := float64(v.BaseY - top)
	slot := float64(v.PlotW) / float64(len(points))
	gap := slot * 0.2
	barW := (slot - gap) / float64(len(series))
	if tickEvery <= 0 {
		tickEvery = 1
	}
	for i, p := range points {
		g := ChartGroup{Label: p.Label}
		x0 := float64(left) + float64(i)*slot + gap/2
		for j := range series {
			var val int64
			if j < len(p.Values) {
				val = p.Values[j]
			}
			h := 0.0
			if max > 0 {
				h = plotH * float64(val) / float64(max)
			}
			if val > 0 && h < 1 {
				h = 1 // a value is never invisible
			}
			unit := ""
			if j < len(units) {
				unit = units[j]
				if val != 1 {
					unit += "s"
				}
			}
			g.Bars = append(g.Bars, ChartBar{X: num(x0 + float64(j)*barW), Y: num(float64(v.BaseY) - h), W: num(barW), H: num(h),
				Class: series[j].Class, Value: val, Title: p.Label + " · " + strconv.FormatInt(val, 10) + " " + unit})
		}
		v.Groups = append(v.Groups, g)
		if i%tickEvery == 0 || i == len(points)-1 {
			v.Ticks = append(v.Ticks, ChartTick{X: num(float64(left) + (float64(i)+0.5)*slot), Label: p.Label})
		}
	}
	return v
}

func maxInt64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// num writes a coordinate with at most one decimal, which is all a viewBox of a few hundred
// units needs.
func num(f float64) string { return strconv.FormatFloat(float64(int64(f*10+0.5))/10, 'f', -1, 64) }

func itoa(n int) string       { return strconv.Itoa(n) }
func i64(n int64) string      { return strconv.FormatInt(n, 10) }
func viewBox(w, h int) string { return "0 0 " + itoa(w) + " " + itoa(h) }
