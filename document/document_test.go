package document

import (
	"strings"
	"testing"
)

// Another tool's JSON (a package.json, with its "version" string) is
// called what it is, not a malformed collbench document; a document that
// names itself collbench's keeps the strict checks.
func TestNotACollbenchDocument(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"name":"x","version":"1.0.0","dependencies":{}}`, "not a collbench document"},
		{`{"version":1}`, "not a collbench document"},
		{`{"schema":7}`, "not a collbench document"},
		{`{"schema":"collbench.run","version":"1"}`, `collbench.run document whose "version" is not a whole number`},
		{`{"schema":"something.else","version":"2"}`, "not a collbench run, profile or health record"},
	} {
		_, err := DecodeDocument(strings.NewReader(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.text, err, c.want)
		}
		if _, err := DecodeRun(strings.NewReader(c.text)); err == nil {
			t.Errorf("%s read as a run", c.text)
		}
	}
}
