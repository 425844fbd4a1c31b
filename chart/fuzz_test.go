package chart

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
)

// Whatever a file holds, plotting and reporting it either works or fails
// with one line; it never panics.
func FuzzDocumentCharts(f *testing.F) {
	for _, name := range []string{"allreduce", "profile", "health"} {
		data, err := os.ReadFile("testdata/" + name + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"schema":"collbench.run","version":1,"collective":"x","results":[{"size":1,"out_of_place":{"time":1e308,"bus_bw":1e308}},{"size":9007199254740993,"out_of_place":{"time":1e-300,"bus_bw":-5}}]}`))
	f.Add([]byte(`{"schema":"collbench.health","version":1,"nodes":[{"name":"a","ranks":[0,1]},{"name":"b","ranks":[2]}],"inter_pairs":[{"node":-1,"a":0,"b":1,"busbw":1e308,"passes":[1e308]}],"intra_pairs":[{"node":0,"a":0,"b":1,"busbw":-3,"passes":[-3]}],"bisection":[{"level":1,"nodes":[9],"busbw":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := document.DecodeDocument(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if err := Render(&bytes.Buffer{}, "svg", FromDocument(d, "f"), Options{}); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error of several lines: %q", err)
		}
		if err := WriteHTML(&bytes.Buffer{}, "t", []Entry{{Name: "f", Doc: d}}); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error of several lines: %q", err)
		}
		if d.Health != nil {
			if err := RenderHealth(&bytes.Buffer{}, "png", d.Health); err != nil && strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
		}
	})
}
