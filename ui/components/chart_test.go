package components

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestNewBarChart(t *testing.T) {
	series := []ChartSeries{{"Messages", "m"}, {"Runs", "r"}}
	units := []string{"message", "run"}

	t.Run("scales bars to the largest value and stands them on the axis", func(t *testing.T) {
		v := NewBarChart("Activity", 232, 120, series, units, []ChartPoint{
			{Label: "10:00", Values: []int64{4, 1}},
			{Label: "11:00", Values: []int64{0, 2}},
		}, 1)
		if v.Empty || v.MaxLabel != "4" || len(v.Groups) != 2 || len(v.Groups[0].Bars) != 2 {
			t.Fatalf("%+v", v)
		}
		// The plot is 200 wide (28 left, 4 right) and 92 high (8 top, 20 bottom): slots of 100,
		// a gap of 20, bars of 40.
		top := v.Groups[0].Bars[0]
		if top.X != "38" || top.W != "40" || top.H != "92" || top.Y != "8" || top.Title != "10:00 · 4 messages" {
			t.Fatalf("largest bar %+v", top)
		}
		if b := v.Groups[0].Bars[1]; b.X != "78" || b.H != "23" || b.Y != "77" || b.Title != "10:00 · 1 run" {
			t.Fatalf("second bar %+v", b)
		}
		if b := v.Groups[1].Bars[0]; b.H != "0" || b.Value != 0 {
			t.Fatalf("a zero bar %+v", b)
		}
	})

	t.Run("labels every n-th group and the last", func(t *testing.T) {
		var pts []ChartPoint
		for _, l := range []string{"a", "b", "c", "d", "e"} {
			pts = append(pts, ChartPoint{Label: l, Values: []int64{1, 0}})
		}
		v := NewBarChart("x", 100, 50, series, units, pts, 2)
		var got []string
		for _, tk := range v.Ticks {
			got = append(got, tk.Label)
		}
		if strings.Join(got, ",") != "a,c,e" {
			t.Fatalf("ticks %v", got)
		}
		pts = append(pts, ChartPoint{Label: "f", Values: []int64{1000, 0}})
		v = NewBarChart("x", 100, 50, series, units, pts, 2)
		if h := v.Groups[0].Bars[0].H; h != "1" {
			t.Fatalf("a value 1000 times smaller than the largest is %s high, want 1", h)
		}
	})

	t.Run("an all-zero chart says it is empty and draws no bar", func(t *testing.T) {
		v := NewBarChart("Activity", 200, 100, series, units, []ChartPoint{{Label: "10:00", Values: []int64{0, 0}}}, 1)
		var buf bytes.Buffer
		if err := BarChart(v).Render(context.Background(), &buf); err != nil {
			t.Fatal(err)
		}
		html := buf.String()
		if !v.Empty || !strings.Contains(html, `data-testid="chart-empty"`) || strings.Contains(html, "<rect") || strings.Contains(html, "style=") {
			t.Fatalf("%s", html)
		}
	})
}
