package charge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/collbench/collbench/export"
	"github.com/collbench/collbench/fileio"
)

// Call is one call of a plan as collbench predict counts it: a
// collective over a group of ranks in a layout, of Bytes as nccl-tests
// counts its size, in the dimension that makes it.
type Call struct {
	Dim    string  `json:"dim"`        // DP, EDP, TP, PP or EP
	Coll   string  `json:"collective"` // collbench's collective name
	Group  int     `json:"group_size"`
	Layout string  `json:"layout"` // consecutive or strided
	Bytes  float64 `json:"bytes"`
	// PerStep is how many such calls a training step makes, which weighs
	// the call in a step's total (Steps).
	PerStep float64 `json:"calls_per_step"`
	// TP and EP are the plan's tensor- and expert-parallel sizes, which a
	// planner that times a group by its place in the plan reads (SimAI).
	TP int `json:"-"`
	EP int `json:"-"`
	// World is the plan's number of ranks, which SimAI 1.1 reads to tell
	// a job of one server.
	World int `json:"-"`
}

// Planner charges calls from the files exported for it.
type Planner interface {
	// Name is the planner's, as --to names its export.
	Name() string
	// Charge is the planner's time for the call in µs, or why it cannot
	// time it (its files hold nothing for such a call).
	Charge(c Call) (us float64, err error)
}

// Open reads the exports in dir of every planner this package charges
// for; a planner whose files are not there is left out. None found is an
// error.
func Open(dir string) ([]Planner, error) {
	if st, err := os.Stat(dir); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	var out []Planner
	for _, open := range []struct {
		files []string // the files whose presence says the export is there, the first found read
		read  func(path string) (Planner, error)
	}{
		// Current AIConfigurator reads the parquet table; releases before
		// it, the CSV. Both hold the same rows.
		{[]string{filepath.Join("comm", "nccl", "*", export.AIConfiguratorTable), "nccl_perf.txt"}, readAIConfigurator},
		{[]string{"calculon_networks.json"}, readCalculon},
		{[]string{"sp_time_*nodes_*gpus_per_node.json"}, func(string) (Planner, error) { return readGalvatron(dir) }},
		{[]string{export.AstraTraceFile}, readAstra},
		{[]string{"simai_analytical.args"}, readSimAI},
		{[]string{"busbw.yaml"}, readSimAI11},
	} {
		var m []string
		for _, f := range open.files {
			if m, _ = filepath.Glob(filepath.Join(dir, f)); len(m) > 0 {
				break
			}
		}
		if len(m) == 0 {
			continue
		}
		if len(m) > 1 {
			// Two AIConfigurator version folders: which one a planner
			// would read is the user's to say, not ours to guess.
			return nil, fmt.Errorf("%s holds %d of one planner's tables (%s): keep the one to charge from", dir, len(m), strings.Join(m, ", "))
		}
		p, err := open.read(m[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m[0], err)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no planner export collbench charges calls from (AIConfigurator's comm/nccl/*/nccl_perf.parquet or nccl_perf.txt, calculon_networks.json, Galvatron's sp_time, an ASTRA-sim workload's astra_trace.json, simai_analytical.args, busbw.yaml)", dir)
	}
	return out, nil
}

// readExport reads one of an export's files: a regular file, as the
// export wrote it (fileio.ReadRegular). A FIFO or a device put under a
// planner's file name is refused, never waited on.
func readExport(path string) ([]byte, error) {
	return fileio.ReadRegular(path, fileio.MaxInput)
}
