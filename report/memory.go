package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/collbench/collbench/bench"
)

// Memory writes nccl-tests' -M footer line: the device memory the
// communicators' initialisation, the buffers and the collectives took,
// and their total.
func (t *Table) Memory(u bench.MemoryUse) {
	var b strings.Builder
	for _, m := range []struct {
		name   string
		amount int64
	}{{"Initialization", u.Init}, {"User-Allocated", u.Buffers}, {"Collective", u.Collective}} {
		fmt.Fprintf(&b, "%s %s | ", m.name, memString(m.amount))
	}
	fmt.Fprintf(&b, "Total  %s", memString(u.Init+u.Buffers+u.Collective))
	fmt.Fprintf(t.W, "# %-20s : %s\n", "GPU memory usage", b.String())
}

// memString renders bytes as nccl-tests' getMemString does: B, KB, MB or
// GB (binary), with 2 decimals below 10, 1 below 100, none above. Unlike
// nccl-tests, whose integer abs() turns amounts of 2 GiB and more into
// bytes, those print in GB too.
func memString(bytes int64) string {
	v, unit := float64(bytes), "B"
	for _, u := range []struct {
		name string
		size float64
	}{{"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}} {
		if math.Abs(v) >= u.size {
			v, unit = v/u.size, u.name
			break
		}
	}
	prec := 0
	switch {
	case math.Abs(v) < 10:
		prec = 2
	case math.Abs(v) < 100:
		prec = 1
	}
	return fmt.Sprintf("%.*f %s", prec, v, unit)
}
