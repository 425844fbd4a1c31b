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

// With DistinctHosts every rank has an NCCL_HOSTID of its own, replacing
// one the caller set; without it the caller's is passed through.
func TestDistinctHosts(t *testing.T) {
	for _, distinct := range []bool{false, true} {
		env, ln, err := Env([]string{"NCCL_HOSTID=callers"}, "")
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		code := Run(Options{Procs: 3, Exe: "/bin/sh", Args: []string{"-c", `echo "$RANK $NCCL_HOSTID"`},
			Stdout: &out, Stderr: &errOut, Grace: 5 * time.Second, Env: env, Listener: ln, DistinctHosts: distinct})
		if code != 0 {
			t.Fatalf("exit %d; stderr %q", code, errOut.String())
		}
		ids := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()+errOut.String()), "\n") {
			f := strings.Fields(strings.TrimPrefix(line, "["))
			ids[f[len(f)-1]] = true
		}
		switch {
		case !distinct && (len(ids) != 1 || !ids["callers"]):
			t.Errorf("without DistinctHosts the ranks saw %v, want the caller's NCCL_HOSTID", ids)
		case distinct && (len(ids) != 3 || ids["callers"]):
			t.Errorf("with DistinctHosts the ranks saw %v, want three ids of their own", ids)
		}
	}
}
