package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/collbench/collbench/document"
)

// edits is every record that one edit of a number, a string, an array or
// an object field of v makes: numbers set to values a hand or a bad
// tool writes, arrays emptied, objects nulled.
func edits(v any, apply func(any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, old := range x {
			switch old.(type) {
			case float64:
				for _, n := range []float64{-1, 0, 99, 1e18, -1e18, 0.5} {
					x[k] = n
					apply(x)
				}
			case []any:
				x[k] = []any{}
				apply(x)
				x[k] = nil
				apply(x)
			case map[string]any:
				x[k] = nil
				apply(x)
			case string:
				x[k] = ""
				apply(x)
			}
			x[k] = old
			edits(old, apply)
		}
	case []any:
		for _, e := range x {
			edits(e, apply)
		}
	}
}

// Every single edit of a saved audit record (its price an ab record) and
// of a saved run is refused as the record is read, or printed without a
// panic: collbench report reads files it did not write.
func TestEditedRecordsAreRefusedOrPrinted(t *testing.T) {
	for _, path := range []string{"testdata/audit.json", "testdata/run.json.golden", "../chart/testdata/health.json"} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var root any
		if err := json.Unmarshal(raw, &root); err != nil {
			t.Fatal(err)
		}
		n, refused := 0, 0
		edits(root, func(any) {
			data, err := json.Marshal(root)
			if err != nil {
				t.Fatal(err)
			}
			n++
			if !printSaved(t, data) {
				refused++
			}
		})
		t.Logf("%s: %d edits, %d refused as read", path, n, refused)
		if n < 50 {
			t.Errorf("%s: only %d edits made", path, n)
		}
	}
}

// printSaved reads a saved record and prints its table; false where the
// record was refused. A panic fails the test with the record.
func printSaved(t *testing.T, data []byte) (ok bool) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("panic %v on\n%s", p, data)
		}
	}()
	if bytes.Contains(data, []byte(`"collbench.health"`)) {
		h, err := document.DecodeHealth(bytes.NewReader(data))
		if err != nil {
			return false
		}
		Health(io.Discard, h)
		return true
	}
	saved, err := document.DecodeSaved(bytes.NewReader(data))
	if err != nil {
		return false
	}
	if saved.Audit != nil {
		Audit(io.Discard, saved.Audit)
		return true
	}
	if err := SavedTable(io.Discard, saved.Run, false); err != nil {
		return true
	}
	_ = SavedTable(io.Discard, saved.Run, true)
	return true
}

// The edits the report crashed on: each is refused in one line naming
// the field.
func TestRecordIndicesRefused(t *testing.T) {
	raw, err := os.ReadFile("testdata/audit.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ edit, want string }{
		{`"chosen": 99`, `"chosen" is 99, and the record holds`},
		{`"chosen": -2`, `"chosen" is -2`},
	} {
		var rec map[string]any
		json.Unmarshal(raw, &rec)
		var v map[string]any
		json.Unmarshal([]byte("{"+tc.edit+"}"), &v)
		for k, x := range v {
			rec[k] = x
		}
		data, _ := json.Marshal(rec)
		_, err := document.DecodeSaved(bytes.NewReader(data))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: %v, want %q", tc.edit, err, tc.want)
		}
	}
	price := func(edit string) string {
		return fmt.Sprintf(`{"schema":"collbench.audit","version":1,"settings":[{"label":"x"}],"chosen":0,"price":%s}`, edit)
	}
	for _, tc := range []struct{ rec, want string }{
		{price(`{"arms":[{"letter":"A"}],"base":3}`), `"price": "base" is arm 3, and the record holds 1 arm(s)`},
		{price(`{"arms":[{"letter":"A"}],"base":0,"rows":[{"name":"x","size":8,"arms":[{"arm":7}]}]}`), "a figure of row x 8 is arm 7"},
		{price(`{"arms":[{"letter":"A"}],"base":0,"bands":[{"name":"x","best":-1}]}`), "the best of band x is arm -1"},
	} {
		_, err := document.DecodeSaved(bytes.NewReader([]byte(tc.rec)))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Errorf("%s: %v, want %q", tc.rec, err, tc.want)
		}
	}
}
