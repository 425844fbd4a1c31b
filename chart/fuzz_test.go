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
	for _, name := range []string{"allreduce", "profile"} {
		data, err := os.ReadFile("testdata/" + name + ".json")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"schema":"collbench.run","version":1,"collective":"x","results":[{"size":1,"out_of_place":{"time":1e308,"bus_bw":1e308}},{"size":9007199254740993,"out_of_place":{"time":1e-300,"bus_bw":-5}}]}`))
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
	})
}
