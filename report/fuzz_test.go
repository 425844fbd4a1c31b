package report

import (
	"os"
	"testing"
)

// FuzzSavedRecord feeds the table readers every kind of record they
// print from (a run, an audit record with its price, an ab record inside
// it, a health record), edited at random: a record is either refused as it
// is read or printed whole, never a panic.
func FuzzSavedRecord(f *testing.F) {
	for _, seed := range []string{"testdata/audit.json", "testdata/run.json.golden", "../chart/testdata/health.json"} {
		data, err := os.ReadFile(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"schema":"collbench.audit","version":1,"settings":[],"chosen":99}`))
	f.Add([]byte(`{"schema":"collbench.audit","version":1,"settings":[{"label":"x"}],"chosen":0,"price":{"arms":[],"base":3,"rows":[{"arms":[{"arm":7}]}],"bands":[{"best":5}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		printSaved(t, data)
	})
}
