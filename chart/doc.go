// Package chart draws what collbench measured: bus bandwidth and time
// against message size for runs and profiles (SVG, PNG or PDF through
// gonum.org/v1/plot), and the one-page HTML or Markdown report that puts
// those charts next to the tables.
package chart
