package chart

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/fileio"
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

// WriteFiles writes a page's files, the page last, and returns what it
// wrote; nothing is written once ctx has ended.
func WriteFiles(ctx context.Context, files []File) ([]string, error) {
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
