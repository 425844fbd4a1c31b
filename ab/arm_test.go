package ab

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseArm(t *testing.T) {
	cases := []struct {
		spec string
		want Arm
		err  string
	}{
		{"", Arm{Label: "as is"}, ""},
		{"lib=/opt/nccl/lib/libnccl.so.2", Arm{Label: "lib=/opt/nccl/lib/libnccl.so.2", Spec: "lib=/opt/nccl/lib/libnccl.so.2", Lib: "/opt/nccl/lib/libnccl.so.2"}, ""},
		{"name=LL NCCL_PROTO=LL", Arm{Label: "LL", Spec: "name=LL NCCL_PROTO=LL", Env: []string{"NCCL_PROTO=LL"}}, ""},
		// A value with commas is one setting; flags run to the end.
		{"NCCL_ALGO=Ring,Tree -x 1 --nccl-max-ctas 16", Arm{Label: "NCCL_ALGO=Ring,Tree -x 1 --nccl-max-ctas 16",
			Spec: "NCCL_ALGO=Ring,Tree -x 1 --nccl-max-ctas 16", Env: []string{"NCCL_ALGO=Ring,Tree"}, Args: []string{"-x", "1", "--nccl-max-ctas", "16"}}, ""},
		{`name='two words' NCCL_DEBUG_FILE="/tmp/a b"`, Arm{Label: "two words", Spec: `name='two words' NCCL_DEBUG_FILE="/tmp/a b"`,
			Env: []string{"NCCL_DEBUG_FILE=/tmp/a b"}}, ""},
		{"NCCL_PROTO", Arm{}, "neither name=, lib=, NAME=VALUE nor a flag"},
		{"lib=", Arm{}, "names no file"},
		{"name=", Arm{}, "an empty name"},
		{"9X=1", Arm{}, "not an environment variable's name"},
		{"name='open", Arm{}, "an unclosed '"},
		{"COLLBENCH_NCCL_LIB=/opt/nccl", Arm{Label: "lib=/opt/nccl", Spec: "COLLBENCH_NCCL_LIB=/opt/nccl", Lib: "/opt/nccl"}, ""},
		{"WORLD_SIZE=2", Arm{}, "WORLD_SIZE is the job's"},
		{"name=\x1b[2Jgone", Arm{}, "holds a control character"},
		{"OMPI_COMM_WORLD_RANK=0", Arm{}, "OMPI_COMM_WORLD_RANK is the job's"},
		{"COLLBENCH_RENDEZVOUS_FD=3", Arm{}, "is the job's"},
	}
	for _, c := range cases {
		got, err := ParseArm(c.spec)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseArm(%q) error %v, want %q", c.spec, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseArm(%q) = %+v, %v; want %+v", c.spec, got, err, c.want)
		}
	}
}

func TestMatrix(t *testing.T) {
	arms, err := Matrix([]string{"lib=/a,/b", "NCCL_PROTO=LL,Simple"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range arms {
		got = append(got, a.Label)
	}
	want := []string{"lib=/a NCCL_PROTO=LL", "lib=/a NCCL_PROTO=Simple", "lib=/b NCCL_PROTO=LL", "lib=/b NCCL_PROTO=Simple"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("arms %q, want %q", got, want)
	}
	for _, bad := range []string{"NCCL_PROTO", "NCCL_PROTO=", "NCCL_PROTO=LL,,Simple", "-x=0,1"} {
		if _, err := Matrix([]string{bad}); err == nil {
			t.Errorf("Matrix(%q) accepted", bad)
		}
	}
}

func TestLetter(t *testing.T) {
	for i, want := range map[int]string{0: "A", 1: "B", 25: "Z", 26: "AA", 27: "AB", 52: "BA"} {
		if got := Letter(i); got != want {
			t.Errorf("Letter(%d) = %q, want %q", i, got, want)
		}
	}
}

func TestCulprit(t *testing.T) {
	cases := []struct {
		codes []int
		rank  int
		ok    bool
	}{
		{[]int{0, 0}, 0, false},
		{[]int{1, 0}, 0, true},
		{[]int{1, 2}, 1, true},    // a usage error is the rank's own; 1 is what a peer reports
		{[]int{4, 1, 7}, 2, true}, // wrong results are the rank's own
		{[]int{0, 4, 1}, 1, true}, // both consequences: the first
		{[]int{130, 1}, 0, true},  // a signal
	}
	for _, c := range cases {
		var reps []report
		for _, code := range c.codes {
			reps = append(reps, report{Code: code})
		}
		rank, _, ok := culprit(reps)
		if ok != c.ok || (ok && rank != c.rank) {
			t.Errorf("culprit(%v) = %d, %v; want %d, %v", c.codes, rank, ok, c.rank, c.ok)
		}
	}
}

func FuzzParseArm(f *testing.F) {
	for _, s := range []string{"", "lib=/x NCCL_PROTO=LL -x 1", `name="a b" 'c`, "=", "-", "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		a, err := ParseArm(spec)
		if err != nil {
			return
		}
		if a.Label == "" {
			t.Fatalf("ParseArm(%q): no label", spec)
		}
		for _, kv := range a.Env {
			if name, _, ok := strings.Cut(kv, "="); !ok || !envName.MatchString(name) {
				t.Fatalf("ParseArm(%q): setting %q", spec, kv)
			}
		}
		if len(a.Args) > 0 && !strings.HasPrefix(a.Args[0], "-") {
			t.Fatalf("ParseArm(%q): flags begin with %q", spec, a.Args[0])
		}
	})
}
