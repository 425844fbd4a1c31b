// Package chart draws what collbench measured: bus bandwidth and time
// against message size for runs and profiles (SVG, PNG or PDF through
// gonum.org/v1/plot), a health record's pair matrices as heat maps, and
// the one-page HTML or Markdown report that puts those charts next to the
// tables. PlotFiles and ReportFiles take the saved files' paths and write
// the image or the page through fileio, all rendered in memory first, so
// a failure leaves no file.
package chart
