package launch

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Real processes: rank 0's output is passed through, the others' lines
// carry their rank, and the first failure's exit code is returned with a
// line naming it.
func TestRunRelaysAndFails(t *testing.T) {
	env, ln, err := Env(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(Options{Procs: 3, Exe: "/bin/sh", Args: []string{"-c", `echo "out $RANK of $WORLD_SIZE"; [ "$RANK" = 2 ] && exit 3; exit 0`},
		Stdout: &out, Stderr: &errOut, Grace: 5 * time.Second, Env: env, Listener: ln})
	if code != 3 {
		t.Fatalf("exit %d, want rank 2's 3; stderr %q", code, errOut.String())
	}
	if out.String() != "out 0 of 3\n" {
		t.Errorf("stdout %q, want rank 0's line alone", out.String())
	}
	for _, want := range []string{"[rank 1] out 1 of 3", "[rank 2] out 2 of 3", "rank 2 failed first", "2 (exit 3)"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
}
