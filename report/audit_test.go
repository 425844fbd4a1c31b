package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/collbench/collbench/document"
	"github.com/collbench/collbench/internal/golden"
)

// An audit on the host backend as testdata/audit.golden holds it: the
// settings and whether each repeated, one line per setting and kind of
// check that differed with its first difference, the count of checks by
// kind, the choice, and the price as ab's table; the record is one the
// audit wrote (testdata/audit.json).
func TestAuditGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/audit.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec document.AuditRun
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	Audit(&b, &rec)
	golden.Check(t, "audit.golden", b.Bytes())
}

// Where every check found the same bits, the table says so in one line
// and lists no differences.
func TestAuditWithoutDifferences(t *testing.T) {
	zero := 0
	rec := &document.AuditRun{Stamp: document.Stamp{Backend: "host"}, Command: []string{"allreduce"}, Ranks: 2, Repeats: 3, Chosen: &zero,
		Settings: []document.AuditSetting{{Label: "own choice", Default: true, Repeats: true}},
		Checks:   []document.AuditCheck{{Kind: document.AuditRunToRun, Setting: "own choice", Size: 1024}}}
	var b bytes.Buffer
	Audit(&b, rec)
	for _, w := range []string{"# every check found the same bits", "# checks that differed: run-to-run 0 of 1", "# chosen: own choice, which repeated"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("lacks %q:\n%s", w, b.String())
		}
	}
	if strings.Contains(b.String(), "# differences") {
		t.Errorf("lists differences:\n%s", b.String())
	}
}
