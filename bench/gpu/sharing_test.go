package gpu

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/collbench/collbench/bench"
	"github.com/collbench/collbench/nccl"
)

// h100 is an H100 SXM's seat: 132 multiprocessors.
func h100(bus string, ordinal int) gpuSeat { return gpuSeat{Bus: bus, Ordinal: ordinal, SMs: 132} }

func proc(host string, first int, gpus ...gpuSeat) placement {
	return placement{Host: host, First: first, GPUs: gpus}
}

// TestPlanCTAs: ranks that share a GPU each get the share of its
// multiprocessors that lets their channels be resident together, 4 SMs
// left over (at most NCCL's 64), whether they are local ranks of one
// process or processes of one machine; an asked-for limit or
// NCCL_MAX_CTAS is kept and said.
func TestPlanCTAs(t *testing.T) {
	gpu0, gpu1 := h100("0000:18:00.0", 0), h100("0000:2a:00.0", 1)
	tests := []struct {
		name       string
		all        []placement
		me         int
		asked, min int
		env        string
		want       []int
		notes      []string // fragments, one per note
	}{
		{"one rank per GPU", []placement{proc("a", 0, gpu0, gpu1)}, 0, 0, 0, "", []int{0, 0}, nil},
		{"two ranks on one GPU", []placement{proc("a", 0, gpu0, gpu0)}, 0, 0, 0, "", []int{64, 64},
			[]string{"ranks 0-1 share GPU 0 (0000:18:00.0, 132 SMs): each rank's CTAs limited to 64 so that together they fit"}},
		{"four ranks on one GPU", []placement{proc("a", 0, gpu0, gpu0, gpu0, gpu0)}, 0, 0, 0, "", []int{32, 32, 32, 32},
			[]string{"ranks 0-3 share GPU 0", "limited to 32 so that together they fit"}},
		{"eight ranks on one GPU", []placement{proc("a", 0, gpu0, gpu0, gpu0, gpu0, gpu0, gpu0, gpu0, gpu0)}, 0, 0, 0, "",
			[]int{16, 16, 16, 16, 16, 16, 16, 16}, []string{"ranks 0-7 share GPU 0", "limited to 16"}},
		{"two pairs", []placement{proc("a", 0, gpu0, gpu0, gpu1, gpu1)}, 0, 0, 0, "", []int{64, 64, 64, 64},
			[]string{"ranks 0-1 share GPU 0", "ranks 2-3 share GPU 1"}},
		{"four processes of one machine", []placement{proc("a", 0, gpu0), proc("a", 1, gpu0), proc("a", 2, gpu0), proc("a", 3, gpu0)},
			2, 0, 0, "", []int{32}, []string{"ranks 0-3 share GPU 0", "limited to 32"}},
		{"one bus id on two machines", []placement{proc("a", 0, gpu0), proc("b", 1, gpu0)}, 1, 0, 0, "", []int{0}, nil},
		{"asked for", []placement{proc("a", 0, gpu0, gpu0, gpu0, gpu0)}, 0, 8, 0, "", []int{0, 0, 0, 0},
			[]string{"each rank's CTAs limited to 8 as asked"}},
		{"asked for more than fits", []placement{proc("a", 0, gpu0, gpu0, gpu0, gpu0)}, 0, 64, 0, "", []int{0, 0, 0, 0},
			[]string{"limited to 64 as asked; together they may need 256 CTAs, more than the GPU runs at once (32 each would fit)"}},
		{"NCCL_MAX_CTAS", []placement{proc("a", 0, gpu0, gpu0, gpu0, gpu0)}, 0, 0, 0, "12", []int{0, 0, 0, 0},
			[]string{"NCCL_MAX_CTAS=12 from the environment limits each rank's CTAs"}},
		{"minimum above the share", []placement{proc("a", 0, gpu0, gpu0, gpu0, gpu0)}, 0, 0, 40, "", []int{40, 40, 40, 40},
			[]string{"limited to 40, its minimum, above the 32 that would fit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := planCTAs(tt.all, tt.me, tt.asked, tt.min, tt.env)
			if !slices.Equal(plan.limits, tt.want) {
				t.Errorf("limits %v, want %v", plan.limits, tt.want)
			}
			if len(plan.notes) != len(plan.shared) || (len(tt.notes) == 0) != (len(plan.notes) == 0) {
				t.Errorf("notes %q: want one per shared GPU (%d)", plan.notes, len(plan.shared))
			}
			all := strings.Join(plan.notes, "\n")
			for _, n := range tt.notes {
				if !strings.Contains(all, n) {
					t.Errorf("notes %q lack %q", plan.notes, n)
				}
			}
		})
	}
}

// The config of a rank on a shared GPU carries its limit; the other
// ranks keep NCCL's default, and what was asked for stays as asked.
func TestConfigBoundsSharedGPU(t *testing.T) {
	c := &Comm{version: nccl.V(2, 30, 7), plan: ctaPlan{limits: []int{33, 0}}}
	if got := c.config(0).MaxCTAs; got != 33 {
		t.Errorf("shared GPU: maxCTAs %d, want 33", got)
	}
	if got := c.config(1).MaxCTAs; got != nccl.Unset {
		t.Errorf("GPU of its own: maxCTAs %d, want NCCL's default", got)
	}
	c.plan = planCTAs([]placement{proc("a", 0, h100("x", 0), h100("x", 0))}, 0, 8, 0, "")
	c.tuning.MaxCTAs = 8
	if got := c.config(0).MaxCTAs; got != 8 {
		t.Errorf("asked for 8: maxCTAs %d", got)
	}
}

// From NCCL 2.30 a send/receive ring's communicators are told each rank
// has two peers, as nccl-tests' sendrecv does; older releases have no
// such member.
func TestConfigP2PPeers(t *testing.T) {
	s := Tuning{P2PPeers: bench.Collectives[bench.SendRecv].P2PPeers}
	if got := commConfig(nccl.V(2, 30, 7), s).MaxP2pPeers; got != 2 {
		t.Errorf("2.30.7: maxP2pPeers %d, want 2", got)
	}
	if got := commConfig(nccl.V(2, 29, 7), s).MaxP2pPeers; got != nccl.Unset {
		t.Errorf("2.29.7: maxP2pPeers %d, want unset", got)
	}
	if got := commConfig(nccl.V(2, 30, 7), Tuning{}).MaxP2pPeers; got != nccl.Unset {
		t.Errorf("all-reduce: maxP2pPeers %d, want unset", got)
	}
}

// Every process learns every other's placement and rank 0's id through
// one exchange.
func TestExchangePlacements(t *testing.T) {
	procs := []placement{{ID: []byte{1, 2, 3}, Host: "a", First: 0, GPUs: []gpuSeat{h100("x", 0)}},
		{Host: "a", First: 1, GPUs: []gpuSeat{h100("x", 0)}}}
	exchange := func(_ context.Context, mine []byte) ([][]byte, error) {
		var out [][]byte
		for i, p := range procs {
			if i == 1 {
				out = append(out, mine)
				continue
			}
			b, _ := json.Marshal(p)
			out = append(out, b)
		}
		return out, nil
	}
	all, err := exchangePlacements(t.Context(), bench.Setup{Exchange: exchange}, procs[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || string(all[0].ID) != "\x01\x02\x03" || all[1].First != 1 || all[1].GPUs[0].SMs != 132 {
		t.Errorf("placements %+v", all)
	}
	if plan := planCTAs(all, 1, 0, 0, ""); !slices.Equal(plan.limits, []int{64}) {
		t.Errorf("limits %v, want [64]", plan.limits)
	}
	if _, err := exchangePlacements(t.Context(), bench.Setup{Exchange: func(context.Context, []byte) ([][]byte, error) {
		return [][]byte{[]byte("{")}, nil
	}}, procs[0]); err == nil || !strings.Contains(err.Error(), "process 0") {
		t.Errorf("a garbled placement: %v", err)
	}
}

// SharedDevices lists the job's ranks on each GPU more than one of them
// runs on, whichever process holds them.
func TestSharedDevices(t *testing.T) {
	gpu0, gpu1 := h100("0000:18:00.0", 0), h100("0000:2a:00.0", 1)
	all := []placement{proc("a", 0, gpu0, gpu1), proc("a", 2, gpu0, gpu1), proc("b", 4, gpu0, gpu1)}
	c := &Comm{plan: planCTAs(all, 0, 0, 0, "")}
	got := c.SharedDevices()
	if len(got) != 2 || !slices.Equal(got[0], []int{0, 2}) || !slices.Equal(got[1], []int{1, 3}) {
		t.Errorf("shared devices %v, want [[0 2] [1 3]]", got)
	}
}

// Processes that pose as hosts of their own, under host names of their
// own (UTS namespaces, as containers have), are one machine, so their GPU
// counts as shared. The check runs this test binary in a new UTS
// namespace under another host name.
func TestMachineIDIgnoresHostName(t *testing.T) {
	if os.Getenv("COLLBENCH_TEST_MACHINE_ID") != "" {
		fmt.Println(machineID())
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare")
	}
	if err := exec.Command(unshare, "-u", "true").Run(); err != nil {
		t.Skipf("no UTS namespace here: %v", err)
	}
	out, err := exec.Command(unshare, "-u", "sh", "-c",
		`hostname collbench-elsewhere && COLLBENCH_TEST_MACHINE_ID=1 exec "$0" -test.run '^TestMachineIDIgnoresHostName$'`,
		os.Args[0]).Output()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	got, _, _ := strings.Cut(string(out), "\n")
	if want := machineID(); got != want || !strings.HasPrefix(want, "boot:") {
		t.Errorf("under another host name the machine is %q, here %q; want one boot id", got, want)
	}
}
