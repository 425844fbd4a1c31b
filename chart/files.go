package chart

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/setting"
)

// Load reads runs and profiles (at most limit bytes each), naming each
// after its file, or after its path where two files share a name.
func Load(ctx context.Context, paths []string, limit int64) ([]Entry, error) {
	entries := make([]Entry, 0, len(paths))
	bases := map[string]int{}
	for _, p := range paths {
		bases[strings.TrimSuffix(filepath.Base(p), ".json")]++
	}
	for _, p := range paths {
		doc, err := document.Load(ctx, p, limit, document.DecodeDocument)
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		if bases[name] > 1 {
			name = p
		}
		entries = append(entries, Entry{Name: name, Doc: doc})
	}
	return entries, nil
}

// Names lists the entries' names, for a default title.
func Names(entries []Entry) string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return strings.Join(names, ", ")
}

// ErrNothingToPlot is a chart none of whose lines has a measured size,
// or whose filter kept none.
var ErrNothingToPlot = setting.Errorf("nothing to plot: no line has a measured size (or none matches {Only})")

// PlotFiles draws the runs and profiles in inputs (read up to limit bytes
// each) into the image out, in format, keeping the lines keep matches
// (nil keeps all); an empty title is the files' names. It returns the
// number of lines drawn. Nothing is written when anything fails; the
// caller checks beforehand that out can be written and is no input.
func PlotFiles(ctx context.Context, out, format string, inputs []string, limit int64, keep *regexp.Regexp, o Options) (int, error) {
	entries, err := Load(ctx, inputs, limit)
	if err != nil {
		return 0, err
	}
	if len(entries) == 1 && entries[0].Doc.Health != nil {
		// A health record plots as the heat maps of its pairs.
		var img bytes.Buffer
		if err := RenderHealth(&img, format, entries[0].Doc.Health); err != nil {
			return 0, err
		}
		return 1, fileio.WriteBytes(ctx, out, img.Bytes())
	}
	series := Select(entries, keep)
	if len(series) == 0 {
		return 0, ErrNothingToPlot
	}
	if o.Title == "" {
		o.Title = Names(entries)
	}
	o.Guides = append(o.Guides, SelectGuides(entries, keep)...)
	var img bytes.Buffer
	if err := Render(&img, format, series, o); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return len(series), fileio.WriteBytes(ctx, out, img.Bytes())
}

// ReportFiles writes the report page out (.html or .md, whose charts go
// to SVG files beside it) for the inputs, read up to limit bytes each; an
// empty title names the files. Everything is rendered in memory first, so
// a failure leaves no file. It returns the files written, the page last;
// the caller checks the page as PlotFiles' caller checks its image, and a
// chart file that would overwrite an input is a *fileio.SameFileError.
func ReportFiles(ctx context.Context, out, title string, inputs []string, limit int64) ([]string, error) {
	entries, err := Load(ctx, inputs, limit)
	if err != nil {
		return nil, err
	}
	if title == "" {
		title = "collbench report: " + Names(entries)
	}
	files, err := Page(out, title, entries)
	if err != nil {
		return nil, err
	}
	for _, img := range files[:len(files)-1] { // the page itself was checked before reading
		if err := fileio.Distinct(img.Path, inputs); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range files {
		if err := fileio.WriteBytes(ctx, f.Path, f.Data); err != nil {
			return written, err
		}
		written = append(written, f.Path)
	}
	return written, nil
}
