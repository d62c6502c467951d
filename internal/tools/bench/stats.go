package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// sample is the runs of one figure.
type sample []float64

func (s sample) sorted() []float64 {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func (s sample) median() float64 {
	c := s.sorted()
	switch n := len(c); {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return c[n/2]
	default:
		return (c[n/2-1] + c[n/2]) / 2
	}
}

func (s sample) min() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return slices.Min(s)
}

func (s sample) max() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	return slices.Max(s)
}

// percentile by nearest rank (p in 0..100).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	c := slices.Clone(xs)
	slices.Sort(c)
	k := int(math.Ceil(p/100*float64(len(c)))) - 1
	return c[max(0, min(k, len(c)-1))]
}

// num formats a figure with three significant digits and thousands
// separators.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 0):
		return "∞"
	}
	a := math.Abs(v)
	var s string
	switch {
	case a >= 1000:
		s = group(fmt.Sprintf("%.0f", v))
	case a >= 100:
		s = fmt.Sprintf("%.0f", v)
	case a >= 10:
		s = fmt.Sprintf("%.1f", v)
	case a >= 1:
		s = fmt.Sprintf("%.2f", v)
	case a == 0:
		s = "0"
	default:
		s = fmt.Sprintf("%.3g", v)
	}
	return s
}

func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// cell is "median (min–max)" for several runs, the value for one.
func (s sample) cell() string {
	switch len(s) {
	case 0:
		return "–"
	case 1:
		return num(s[0])
	}
	return fmt.Sprintf("%s (%s–%s)", num(s.median()), num(s.min()), num(s.max()))
}
