package launch

import (
	"bytes"
	"fmt"
	"regexp"
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

// The launcher learns of exits a little out of order, and ranks that
// lose a peer exit 1 (or 4) within milliseconds: a failure of a rank's
// own (a usage error, a signal, wrong results) that comes just after such
// a consequence is taken as its cause.
func TestCulprit(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name     string
		failures []exit
		want     int // rank
	}{
		{"one", []exit{{2, 3, at(0)}}, 2},
		{"rank 0 refused, heard of second", []exit{{1, 1, at(0)}, {0, 2, at(3)}, {2, 1, at(4)}}, 0},
		{"killed rank heard of first", []exit{{2, 137, at(0)}, {0, 1, at(5)}, {1, 1, at(6)}}, 2},
		{"consequences only", []exit{{3, 1, at(0)}, {0, 1, at(2)}}, 3},
		// A refusal is made before the job meets: however late the
		// launcher hears of it (a loaded machine), it is the cause of
		// the lost peer, never its effect.
		{"a refusal long after", []exit{{1, 1, at(0)}, {0, 2, at(5000)}}, 0},
		{"a refusal long after a stall", []exit{{1, 4, at(0)}, {2, 4, at(1)}, {0, 2, at(3000)}}, 0},
		// A signal long after may be the launcher's own, ending what
		// lingered: not a cause.
		{"a signal long after", []exit{{1, 1, at(0)}, {0, 143, at(900)}}, 1},
		{"stall consequences", []exit{{0, 4, at(0)}, {1, 4, at(1)}}, 0},
	}
	for _, tt := range tests {
		if got := culprit(tt.failures); got.rank != tt.want {
			t.Errorf("%s: rank %d, want %d", tt.name, got.rank, tt.want)
		}
	}
}

// Rank 0 refusing its usage after another rank has already exited 1 for
// want of it, as late as a loaded machine makes it: the launch reports
// rank 0's refusal and ends with its code.
func TestRunNamesTheCause(t *testing.T) {
	env, ln, err := Env(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(Options{Procs: 3, Exe: "/bin/sh", Args: []string{"-c", `case $RANK in 0) sleep 1; exit 2;; *) exit 1;; esac`},
		Stdout: &out, Stderr: &errOut, Grace: 5 * time.Second, Env: env, Listener: ln})
	if code != 2 || !strings.Contains(errOut.String(), "rank 0 refused its arguments (exit 2)") || strings.Contains(errOut.String(), "failed first") {
		t.Errorf("exit %d, stderr %q; want rank 0's 2", code, errOut.String())
	}
}

// A rank that never reaches the rendezvous (running, not stopped) fails
// nobody by exiting: the others give up on it with a consequence's code.
// The launcher names the rank it had to end, not the first that gave up.
func TestRunNamesTheRankThatNeverCame(t *testing.T) {
	env, ln, err := Env(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(Options{Procs: 4, Exe: "/bin/sh", Args: []string{"-c", `case $RANK in 2) exec sleep 60;; *) sleep 0.1; exit 4;; esac`},
		Stdout: &out, Stderr: &errOut, Grace: 300 * time.Millisecond, Env: env, Listener: ln})
	if code != 4 {
		t.Errorf("exit %d, want the others' 4", code)
	}
	want := "rank 2 was still running when rank "
	if !strings.Contains(errOut.String(), want) || strings.Contains(errOut.String(), "failed first") {
		t.Errorf("stderr %q; want %q", errOut.String(), want)
	}
}

// One usage error made alike by every rank is printed once, the launch
// says every rank refused its arguments and ends with their 2; a line
// that names its own rank gets no second rank prefix.
func TestRunPrintsARepeatedLineOnce(t *testing.T) {
	env, ln, err := Env(nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := Run(Options{Procs: 4, Exe: "/bin/sh", Args: []string{"-c",
		`echo "collbench allreduce: unknown flag: --bogus" >&2; echo "collbench allreduce: rank $RANK: own words" >&2; echo "then rank $RANK" >&2; exit 2`},
		Stdout: &out, Stderr: &errOut, Grace: 5 * time.Second, Env: env, Listener: ln})
	got := errOut.String()
	if code != 2 || strings.Count(got, "unknown flag: --bogus") != 1 || strings.Contains(got, "failed first") ||
		!strings.Contains(got, "collbench launch: ranks 0-3 refused their arguments (exit 2), as printed above") ||
		!strings.Contains(got, "wrote 6 line(s) another rank had written; each is shown once") {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2, the usage line once and every rank's refusal said", code, got)
	}
	// A line after the one that named its rank still gets the prefix.
	for r := 0; r < 4; r++ {
		if want := fmt.Sprintf("[rank %d] then rank %d\n", r, r); !strings.Contains(got, want) {
			t.Errorf("missing %q:\n%s", want, got)
		}
	}
	// The same words from every rank, each naming itself: one line, with
	// no second rank prefix.
	if n := strings.Count(got, ": own words\n"); n != 1 || !regexp.MustCompile(`(?m)^collbench allreduce: rank [0-3]: own words$`).MatchString(got) {
		t.Errorf("the line every rank wrote naming itself is shown %d times or prefixed again:\n%s", n, got)
	}
}

// Ranks that exit 1 for a finding, and say so on their outcome
// descriptor, are reported as having flagged something, not as failed;
// likewise a check its budget cut short (exit 4).
func TestRunWordsAFinding(t *testing.T) {
	for _, c := range []struct {
		word string
		code int
		want string
	}{
		{Finding, 1, "collbench launch: ranks 0-2 flagged something (exit 1), as printed above; nothing failed"},
		{Incomplete, 4, "collbench launch: ranks 0-2 ran out of budget before the end (exit 4), as printed above; nothing failed"},
		{"", 1, "failed first"},
	} {
		env, ln, err := Env(nil, "")
		if err != nil {
			t.Fatal(err)
		}
		say := ""
		if c.word != "" {
			say = `eval "echo ` + c.word + ` >&$` + OutcomeVar + `"; `
		}
		var out, errOut bytes.Buffer
		code := Run(Options{Procs: 3, Exe: "/bin/sh", Args: []string{"-c", say + "exit " + string(rune('0'+c.code))},
			Stdout: &out, Stderr: &errOut, Grace: 5 * time.Second, Env: env, Listener: ln})
		if code != c.code || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.word, code, errOut.String(), c.code, c.want)
		}
	}
}
