package tuner

import (
	"reflect"
	"testing"
)

// NCCL's lines (src/enqueue.cc's INFO under NCCL_DEBUG_SUBSYS=TUNING, with
// its prefix) and the host backend's: the choice most calls got per size,
// all-gather's bytes scaled from one rank's share to the tuner's count.
func TestReadLog(t *testing.T) {
	log := `gpu0:12:12 [0] NCCL INFO NCCL_DEBUG_SUBSYS set by environment to TUNING
gpu0:12:12 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}
gpu0:12:12 [0] NCCL INFO AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}
gpu0:12:12 [0] NCCL INFO AllReduce: 8 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..0}
gpu0:12:12 [0] NCCL INFO AllReduce: 2097152 Bytes -> Algo NVLS_TREE proto SIMPLE channel{Lo..Hi}={2..17}
gpu0:12:12 [0] NCCL INFO AllGather: 1024 Bytes -> Algo RING proto LL128 channel{Lo..Hi}={0..1}
Broadcast: 65536 Bytes -> Algo DIRECT proto 64K channel{Lo..Hi}={0..0}
Send: 8 Bytes -> nothing a tuner file knows
`
	got := ReadLog([]byte(log), 4)
	want := []Logged{
		{"allgather", 4096, Choice{"ring", "ll128", 2}},
		{"allreduce", 8, Choice{"ring", "ll", 1}},
		{"allreduce", 2097152, Choice{"nvls_tree", "simple", 16}},
		{"broadcast", 65536, Choice{"direct", "64K", 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}
