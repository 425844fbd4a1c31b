package healthcheck

import (
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/run"
)

// sharingComm is a Comm whose ranks share devices as listed.
type sharingComm struct {
	bench.Comm
	shared [][]int
}

func (s sharingComm) SharedDevices() [][]int { return s.shared }

// Arrivals are left unjudged when ranks of different processes share a
// GPU (they take turns on it), and judged when the ranks sharing one are
// all of one process, or none share.
func TestArrivalsUnjudgedOnASharedGPU(t *testing.T) {
	for _, c := range []struct {
		name   string
		per    int
		comm   bench.Comm
		reason string
	}{
		{"no device shared", 1, sharingComm{}, ""},
		{"a backend that cannot say", 1, &closeCounted{}, ""},
		{"one process's ranks", 4, sharingComm{shared: [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}}}, ""},
		{"processes of one machine", 1, sharingComm{shared: [][]int{{0, 1, 2, 3}}}, "ranks 0-3 of 4 processes share one GPU"},
		{"two processes of two ranks", 2, sharingComm{shared: [][]int{{1, 2}}}, "ranks 1-2 of 2 processes share one GPU"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := &run.Job{Settings: run.Settings{RanksPerProc: c.per}}
			check := &healthCheck{j: j, sess: &run.Session{Comm: c.comm}}
			got := check.sharedAcrossProcs()
			if (c.reason == "") != (got == "") || !strings.Contains(got, c.reason) {
				t.Errorf("got %q, want %q", got, c.reason)
			}
		})
	}
}
