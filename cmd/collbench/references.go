package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
	"github.com/collbench/collbench/judge"
)

// referenceTables is the built-in reference table and the site's, read
// from files (each one line naming the file when it is not a table).
func referenceTables(ctx context.Context, files []string) ([]judge.Table, error) {
	tables := []judge.Table{judge.Builtin()}
	for _, path := range files {
		data, err := fileio.Read(ctx, path, inputLimit)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, &document.InputError{Path: path, Err: err}
		}
		t, err := judge.ReadTable(bytes.NewReader(data))
		if err != nil {
			return nil, &document.InputError{Path: path, Err: err}
		}
		for i := range t.Entries {
			t.Entries[i].Site = true
		}
		tables = append(tables, t)
		if err := judge.DistinctIDs(tables); err != nil {
			return nil, &document.InputError{Path: path, Err: err}
		}
	}
	return tables, nil
}

// runReferences is collbench references: the published figures the
// judgement compares with, the built-in table and a site's.
func runReferences(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("references")
	files := fs.StringArray("references", nil, "a site's reference table to list beside the built-in one; repeat for more")
	asJSON := fs.Bool("json", false, "print the built-in table as JSON, the format --references reads")
	return fileCommand(fs, args, stdout, stderr, func() error {
		if fs.NArg() > 0 {
			return usagef("unexpected argument %q", fs.Arg(0))
		}
		tables, err := referenceTables(ctx, *files)
		if err != nil {
			return err
		}
		if *asJSON {
			return encodeJSON(stdout, tables[0])
		}
		writeReferences(stdout, tables, helpWidth(stdout))
		return nil
	})
}

// writeReferences lists the reference tables: a line per figure (id,
// collective, sizes, busbw), its system, conditions and source on
// indented lines under it, wrapped to cols.
func writeReferences(w io.Writer, tables []judge.Table, cols int) {
	b := tables[0]
	fmt.Fprintf(w, "# built-in reference table, version %d, updated %s; bus bandwidth in GB/s\n", b.Version, b.Updated)
	for _, t := range tables {
		for _, e := range t.Entries {
			id := e.ID
			if e.Site {
				id += " (site)"
			}
			nodes := fmt.Sprint(e.NodesMin)
			if e.NodesMax != e.NodesMin {
				nodes += "+"
				if e.NodesMax != 0 {
					nodes = fmt.Sprintf("%d-%d", e.NodesMin, e.NodesMax)
				}
			}
			system := fmt.Sprintf("%s×%d %s, %s node(s)", e.GPU, e.GPUsPerNode, e.Link, nodes)
			if e.NIC != "" {
				system += ", " + e.NIC
			}
			sizes := "≥ " + bench.FormatSize(e.MinBytes)
			if e.MaxBytes != 0 {
				sizes = bench.FormatSize(e.MinBytes) + "–" + bench.FormatSize(e.MaxBytes)
			}
			fmt.Fprintf(w, "\n%s: %s %s, %g GB/s\n", id, e.Collective, sizes, e.BusBW)
			for _, text := range []string{system, strings.ReplaceAll(e.Conditions, "\t", " "), "source: " + e.Source} {
				for _, l := range wrapWords(text, cols-4) {
					fmt.Fprintf(w, "    %s\n", l)
				}
			}
		}
	}
}
