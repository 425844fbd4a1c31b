package run

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/collbench/collbench/bench/host"
)

// The host backend's variables: each value it cannot take is refused in
// one line naming the variable; a tuner file is read in the host
// backend's vocabulary.
func TestHostTuningFromEnv(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.conf")
	bad := filepath.Join(dir, "bad.conf")
	fifo := filepath.Join(dir, "fifo")
	os.WriteFile(good, []byte("# host\nbroadcast,0,4096,direct,64K,1,-1,4\n"), 0o644)
	os.WriteFile(bad, []byte("broadcast,0,4096,tree,simple,1,-1,4\n"), 0o644)
	zero := filepath.Join(dir, "zero.conf")
	os.WriteFile(zero, []byte("broadcast,0,4096,direct,0,1,-1,4\n"), 0o644)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{host.AlgoVar: "tree"}, `COLLBENCH_HOST_ALGO=tree: the host backend has no algorithm "tree"`},
		{map[string]string{host.SegmentVar: "100"}, "COLLBENCH_HOST_SEGMENT=100: a segment of 100 bytes: want a multiple of 16"},
		{map[string]string{host.SegmentVar: "x"}, "COLLBENCH_HOST_SEGMENT=x: invalid size"},
		{map[string]string{host.TunerFileVar: bad}, `line 1: the host backend has no algorithm "tree"`},
		{map[string]string{host.TunerFileVar: fifo}, "not a regular file"},
		{map[string]string{host.TunerFileVar: zero}, "line 1: the protocol column holds the segment: a segment of 0 bytes"},
		{map[string]string{host.TunerFileVar: filepath.Join(dir, "missing")}, "no such file"},
		{map[string]string{host.TuningLogVar: filepath.Join(dir, "no", "log")}, "COLLBENCH_HOST_TUNING_LOG="},
		{map[string]string{host.DoublingMaxVar: "-5"}, "COLLBENCH_HOST_DOUBLING_MAX=-5: invalid size"},
		// A FIFO as the log would block the open until a reader came,
		// deaf to an interrupt; a folder cannot be appended to.
		{map[string]string{host.TuningLogVar: fifo}, "COLLBENCH_HOST_TUNING_LOG=" + fifo + ": a FIFO: name a regular file"},
		{map[string]string{host.TuningLogVar: dir}, "a directory: name a regular file"},
	}
	for _, c := range cases {
		_, err := hostTuning(func(k string) string { return c.env[k] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.env, err, c.want)
		}
		if _, usage := err.(UsageError); !usage {
			t.Errorf("%v: %T is not a usage error", c.env, err)
		}
	}
	tu, err := hostTuning(func(k string) string {
		return map[string]string{host.AlgoVar: "ring", host.SegmentVar: "64K", host.TunerFileVar: good}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if tu.Algorithm != "ring" || tu.Segment != 64<<10 {
		t.Errorf("tuning %+v", tu)
	}
	for v, want := range map[string]int64{"0": host.NoDoubling, "1M": 1 << 20} {
		if tu, err := hostTuning(func(k string) string { return map[string]string{host.DoublingMaxVar: v}[k] }); err != nil || tu.DoublingMax != want {
			t.Errorf("%s=%s: %d, %v; want %d", host.DoublingMaxVar, v, tu.DoublingMax, err, want)
		}
	}
	if c, ok := tu.Table.Choose("broadcast", 4096, 1, 4); !ok || c != (host.Choice{Algorithm: "direct", Segment: 64 << 10}) {
		t.Errorf("the file's row: %+v, %v", c, ok)
	}
	if _, ok := tu.Table.Choose("broadcast", 4097, 1, 4); ok {
		t.Error("a size beyond the row matched it")
	}
}
